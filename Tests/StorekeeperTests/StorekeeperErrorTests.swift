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
}
