import Foundation
import GRDB
import StorekeeperTesting
import Synchronization
import Testing

@testable import StorageSQLite

/// App requests first: the SQLite writer's queue of verification writes does not hold up a
/// purchase being posted. Ordered by signals (the writer held on a semaphore), not by time.
@Suite("SQLite group commit: requests before workers' writes")
struct GroupCommitterTests {
    @Test("a request queued behind many workers' writes is written in the next batch, before them; each unit once")
    func requestsFirst() async throws {
        let path = LocalStack.temporaryDatabasePath()
        defer { LocalStack.removeTemporaryDatabase(path) }
        let pool = try DatabasePool(path: path)
        let (counts, counted) = AsyncStream.makeStream(of: Int.self)
        let (held, holding) = AsyncStream.makeStream(of: Void.self)
        let writer = Writer(
            pool: pool, committer: GroupCommitter(maximumBatch: 256, workBatch: 4, enqueued: { counted.yield($0) }), holding: holding)
        try await withThrowingTaskGroup(of: Void.self) { group in
            // A worker's write holds the writer; everything after it waits in the queues.
            group.addTask { try await writer.unit("w0", .work, holds: true) }
            for await _ in held { break }
            for index in 1...10 { group.addTask { try await writer.unit("w\(index)", .work) } }
            group.addTask { try await writer.unit("r1", .request) }
            for await waiting in counts where waiting == 11 { break }
            writer.release.signal()
            try await group.waitForAll()
        }
        let written = writer.order.withLock { $0 }
        #expect(Array(written.prefix(2)) == ["w0", "r1"], "the request goes first once the writer is free: \(written)")
        // The tasks join the queue in an order of the scheduler's choosing: each unit once is what holds.
        #expect(written.sorted() == ((0...10).map { "w\($0)" } + ["r1"]).sorted(), "every unit written once")
    }

    /// Units that record the order they ran in; the one that `holds` keeps the writer until released.
    final class Writer: Sendable {
        let pool: DatabasePool
        let committer: GroupCommitter
        let holding: AsyncStream<Void>.Continuation
        let order = Mutex<[String]>([])
        let release = DispatchSemaphore(value: 0)

        init(pool: DatabasePool, committer: GroupCommitter, holding: AsyncStream<Void>.Continuation) {
            self.pool = pool
            self.committer = committer
            self.holding = holding
        }

        func unit(_ name: String, _ priority: GroupCommitter.Priority, holds: Bool = false) async throws {
            try await committer.write(pool: pool, priority: priority) { [self] _ in
                if holds {
                    holding.yield()
                    release.wait()
                }
                order.withLock { $0.append(name) }
            }
        }
    }
}
