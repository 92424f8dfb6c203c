import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Synchronization
import TestFixtures
import Testing

@Suite("credit spends across kill -9", .serialized)
struct CreditsCrashTests {
    /// The real `storekeeper` is killed while 1,000 spends of one credit each race against a
    /// balance of 600, restarted, and every spend sent again with its key: exactly 600 are spent,
    /// once each, whatever the kill cut short.
    @Test(
        "1,000 concurrent spends against 600 credits, kill -9 in the middle, all sent again: exactly 600 spent, each once",
        arguments: WebhookTests.backends)
    func killNineWhileSpending(backend: String) async throws {
        try await ChildStack.run("credits-crash", backend: backend) { child in
            let stack = child.stack
            var server = try await child.server()
            func client() -> HTTPJSONClient { HTTPJSONClient(httpClient: stack.httpClient, baseURL: server.baseURL) }

            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            for _ in 0..<6 {
                let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
                let api = StorekeeperClient(http: client(), apiKey: stack.api.apiKey, adminKey: stack.api.adminKey)
                #expect(
                    try await api.postSignedTransaction(appUserId: "alice", signedTransaction: coins.signedTransaction, wait: TestWait.seconds).status
                        == 200)
            }

            /// Each spend's answer: its status, or why none came (the connection died with the server).
            func spendAll(_ http: HTTPJSONClient, keys: [Int]) async -> [Int: Result<Int, SpendFailure>] {
                await withTaskGroup(of: (Int, Result<Int, SpendFailure>).self) { group in
                    for i in keys {
                        group.addTask {
                            do {
                                let reply = try await http.send(
                                    .POST, "/v1/subscribers/alice/credits/spend", headers: Self.headers(key: i), body: Data(Self.body.utf8),
                                    timeout: 600)
                                return (i, .success(reply.status))
                            } catch {
                                return (i, .failure(SpendFailure(description: "\(error)")))
                            }
                        }
                    }
                    return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
                }
            }

            // The first round: all 1,000 at once. The odd keys send their whole request; the even
            // keys send their headers and the first byte of their body, and the rest only after the
            // kill, so however fast the server is, half of the spends are in flight when it dies.
            // It is killed once 50 have been answered, with the odd ones still being spent.
            let answered = AnswerCount(target: 50)
            let held = HeldBodies()
            let baseURL = server.baseURL
            let firstRound = Task {
                await withTaskGroup(of: (Int, Int?).self) { group in
                    for i in 0..<1_000 {
                        group.addTask {
                            var request = HTTPClientRequest(url: baseURL + "/v1/subscribers/alice/credits/spend")
                            request.method = .POST
                            for (name, value) in Self.headers(key: i) { request.headers.add(name: name, value: value) }
                            request.headers.add(name: "Content-Type", value: "application/json")
                            let bytes = Array(Self.body.utf8)
                            if i.isMultiple(of: 2) {
                                let (stream, continuation) = AsyncStream<ByteBuffer>.makeStream()
                                continuation.yield(ByteBuffer(bytes: bytes.prefix(1)))
                                held.keep(continuation, rest: Array(bytes.dropFirst()))
                                request.body = .stream(stream, length: .known(Int64(bytes.count)))
                            } else {
                                request.body = .bytes(ByteBuffer(bytes: bytes))
                            }
                            guard let response = try? await stack.httpClient.execute(request, timeout: .seconds(600)),
                                (try? await response.body.collect(upTo: 1 << 20)) != nil
                            else { return (i, nil) }
                            answered.add()
                            return (i, Int(response.status.code))
                        }
                    }
                    let statuses = await group.reduce(into: [Int: Int?]()) { $0[$1.0] = $1.1 }
                    answered.finish()
                    return statuses
                }
            }
            // Told by the 50th answer itself (or by the round's end, should fewer ever come).
            #expect(await answered.reached(), "spends under way")
            server.killNine()
            held.releaseAll()
            let before = await firstRound.value
            let spentBefore = Set(before.compactMap { (key: Int, status: Int?) in status == 200 ? key : nil })
            let cutShort = before.values.filter { (status: Int?) in status == nil }.count
            #expect(spentBefore.count >= 50 && cutShort >= 500, "the kill lands mid-way: \(spentBefore.count) answered 200, \(cutShort) cut short")
            #expect(try await stack.store.creditsSpent(appId: "demo", appUserId: "alice") >= spentBefore.count, "every answered spend was durable")

            server = try await child.server()
            // All 1,000 sent again at once, as a client retries: a spend whose request found no
            // connection on a busy machine (the client's pool timing out) is sent again, with its key.
            var after: [Int: Result<Int, SpendFailure>] = [:]
            var unanswered = Array(0..<1_000)
            for _ in 0..<10 where !unanswered.isEmpty {
                for (key, result) in await spendAll(client(), keys: unanswered) { after[key] = result }
                unanswered = after.filter { if case .failure = $0.value { true } else { false } }.map(\.key).sorted()
            }
            let statuses = after.values.reduce(into: [String: Int]()) { counts, result in
                switch result {
                case .success(let status): counts["\(status)", default: 0] += 1
                case .failure(let failure): counts[failure.description, default: 0] += 1
                }
            }
            #expect(statuses == ["200": 600, "409": 400], "\(statuses)")
            #expect(spentBefore.allSatisfy { after[$0] == .success(200) }, "a spend answered before the kill answers the same after it")
            #expect(try await stack.store.creditsSpent(appId: "demo", appUserId: "alice") == 600)
            let spends = try await stack.store.creditSpends(appId: "demo", appUserId: "alice", before: nil, limit: 2_000)
            #expect(spends.count == 600 && Set(spends.map(\.spend.id)).count == 600)
            #expect(Set(spends.map(\.spend.balanceAfter)) == Set(0..<600), "each spend left its own balance: none read a stale one")
            let events = try await stack.store.events(appId: "demo", after: 0, types: [.creditsSpent], limit: 2_000).map(\.event)
            #expect(events.count == 600 && Set(events.compactMap { $0.details?.spendId }) == Set(spends.map(\.spend.id)))
            let view = try await StorekeeperClient(http: client(), apiKey: stack.api.apiKey, adminKey: stack.api.adminKey).subscriber("alice")
            #expect(view.creditBalance == 0 && view.creditsSpent == 600)
            server.terminate()
        }
    }
}

extension CreditsCrashTests {
    static let body = #"{"amount":1,"reason":"arrow"}"#

    static func headers(key: Int) -> [String: String] { DemoCallers.backend.merging(["Idempotency-Key": "spend-\(key)"]) { $1 } }
}

struct SpendFailure: Error, Hashable, CustomStringConvertible {
    var description: String
}

/// Counts the first round's answers and tells the waiting test when `target` of them came: a
/// signal from the answers themselves, not a poll.
final class AnswerCount: Sendable {
    private struct State {
        var count = 0
        var ended = false
        var waiter: CheckedContinuation<Bool, Never>?
    }

    private let target: Int
    private let state = Mutex(State())

    init(target: Int) { self.target = target }

    func add() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.count += 1
            guard state.count >= target else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: true)
    }

    /// The round ended (every request answered or failed).
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.ended = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: state.withLock { $0.count } >= target)
    }

    /// True once `target` answers came; false if the round ended with fewer.
    func reached() async -> Bool {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool? in
                if state.count >= target { return true }
                if state.ended { return false }
                state.waiter = continuation
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }
}

/// Request bodies kept unfinished until the server is gone.
final class HeldBodies: Sendable {
    private let held = Mutex<[(AsyncStream<ByteBuffer>.Continuation, [UInt8])]>([])

    func keep(_ continuation: AsyncStream<ByteBuffer>.Continuation, rest: [UInt8]) {
        held.withLock { $0.append((continuation, rest)) }
    }

    func releaseAll() {
        for (continuation, rest) in held.withLock({ $0 }) {
            continuation.yield(ByteBuffer(bytes: rest))
            continuation.finish()
        }
    }
}
