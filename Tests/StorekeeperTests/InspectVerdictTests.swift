import AppStoreSimulator
import Foundation
import StorekeeperTesting
import TestFixtures
import Testing

/// `storekeeper inspect`, the real binary, judging what the server would judge.
@Suite("inspect verdicts")
struct InspectVerdictTests {
    func directory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-inspect-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("base64 by the server's rule: whitespace is read through, any other stray character makes it not a receipt")
    func strictBase64() throws {
        let binary = try #require(TestPaths.storekeeperBinary(), "build the executable first: swift build")
        let folder = try directory()
        let original = String(decoding: try TestPaths.fixture("app_receipts/sandbox_weeka_g5_2025_known_device.b64"), as: UTF8.self)
        let text = original.trimmingCharacters(in: .whitespacesAndNewlines)
        let middle = text.index(text.startIndex, offsetBy: text.count / 2)
        let wrapped = folder.appendingPathComponent("wrapped.b64")
        try (String(text[..<middle]) + "\n \t\r\n" + String(text[middle...])).write(to: wrapped, atomically: true, encoding: .utf8)
        let stray = folder.appendingPathComponent("stray.b64")
        try (String(text[..<middle]) + "!" + String(text[middle...])).write(to: stray, atomically: true, encoding: .utf8)

        let read = try runToExit(binary, ["inspect", wrapped.path])
        #expect(read.reason == .exit && read.status == 0, "\(read.output)")
        let refused = try runToExit(binary, ["inspect", stray.path])
        #expect(refused.reason == .exit && refused.status == 1 && refused.output.contains("not an app receipt"), "\(refused.output)")
    }

    @Test("a notification whose nested transaction cannot be read is invalid as a whole")
    func unreadableNested() throws {
        let binary = try #require(TestPaths.storekeeperBinary(), "build the executable first: swift build")
        let folder = try directory()
        let now = Date()
        let pki = try SimulatorPKI(now: now)
        let root = folder.appendingPathComponent("root.pem")
        try pki.rootPEM().write(to: root, atomically: true, encoding: .utf8)
        let signedMs = Int64(now.timeIntervalSince1970 * 1000)
        let transaction = try pki.signJWS(
            payload: Array(#"{"bundleId":"com.example","environment":"Sandbox","transactionId":"1","signedDate":\#(signedMs)}"#.utf8))
        func notification(nested: String) throws -> URL {
            let payload = #"""
                {"notificationType":"ONE_TIME_CHARGE","notificationUUID":"\#(UUID().uuidString.lowercased())","signedDate":\#(signedMs),"version":"2.0","data":{"bundleId":"com.example","environment":"Sandbox","signedTransactionInfo":"\#(nested)"}}
                """#
            let file = folder.appendingPathComponent("\(UUID().uuidString).json")
            try #"{"signedPayload":"\#(try pki.signJWS(payload: Array(payload.utf8)))"}"#.write(to: file, atomically: true, encoding: .utf8)
            return file
        }

        let good = try runToExit(binary, ["inspect", try notification(nested: transaction).path, "--root", root.path])
        #expect(good.reason == .exit && good.status == 0, "\(good.output)")
        let bad = try runToExit(binary, ["inspect", try notification(nested: "not-a-jws").path, "--root", root.path])
        #expect(bad.reason == .exit && bad.status == 2, "\(bad.output)")
        #expect(bad.output.contains("unreadable") && bad.output.contains("INVALID"), "\(bad.output)")
    }
}
