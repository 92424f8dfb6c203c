import JobQueue
import StorekeeperCore
import StorekeeperErrors
import StorekeeperServer
import StorekeeperWire
import Testing

@Suite("StorekeeperError: where it was raised, in logs only")
struct StorekeeperErrorTests {
    @Test("the error knows its file and line and says them in its description")
    func fileAndLine() {
        let error = StorekeeperError(.notFound, "no such thing")
        let raisedAt = #line - 1
        #expect(error.file == #fileID && error.line == raisedAt)
        #expect(error.description.hasSuffix("[\(#fileID):\(raisedAt)]"), "\(error.description)")
    }

    @Test("every module's error is the one CodedError: the job store's and Apple actions' know where they were raised too")
    func oneShape() {
        let lease = JobStoreError(.leaseLost, "the lease moved on")
        let leaseLine = #line - 1
        let apple = AppleActionError(.rejected, "Apple said 4040010", cause: lease)
        let appleLine = #line - 1
        #expect(lease.file == #fileID && lease.line == leaseLine && lease.code == .leaseLost)
        #expect(apple.line == appleLine && apple.code == .rejected)
        #expect(
            apple.description
                == "rejected: Apple said 4040010 (cause: lease_lost: the lease moved on [\(#fileID):\(leaseLine)]) [\(#fileID):\(appleLine)]")
    }
}
