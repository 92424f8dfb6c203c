import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import StorekeeperDomain

/// `storekeeper import FILE`: existing customers brought into a running server
/// (docs/IMPORT.md). The file is read here (JSON lines, CSV, or RevenueCat's Transactions
/// export), its rows posted to `POST /v1/admin/apps/{app}/imports` in batches; each becomes a
/// durable verification on the server, so the import survives this command's or the server's
/// end. The command then follows it by posting the unfinished rows again (which finds their
/// verifications and changes nothing), showing progress with its rate and time left, and
/// reports every row that failed and why.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Import existing customers from a file: each row's purchases read through Apple and granted once.")

    @Argument(help: "The file: JSON lines, CSV (app_user_id + one evidence column), or a RevenueCat Transactions export.")
    var file: String
    @Option(help: "The app's id in the configuration.") var app: String
    @Option(help: "jsonl, csv or revenuecat (default: detected from the first line).") var format: String?
    @Option(help: "The server's base URL (also STOREKEEPER_URL).") var url: String?
    @Option(help: "The admin key (also STOREKEEPER_ADMIN_KEY).") var adminKey: String?
    @Option(help: "Rows per request (1-1000).") var batch = 500
    @Option(help: "Write the rows that failed, and why, to this CSV file.") var report: String?
    @Option(help: "Give up following after this many seconds (exit 2; the import goes on on the server).") var timeout: Double = 3_600
    @Flag(help: "Post the rows and stop, without following them.") var noWait = false

    func validate() throws {
        guard (1...1_000).contains(batch) else { throw ValidationError("--batch must be 1-1000") }
        if let format, ImportFile.Format(rawValue: format) == nil { throw ValidationError("--format must be jsonl, csv or revenuecat") }
    }

    /// One row as the command follows it.
    struct Tracked {
        var line: Int
        var row: ImportRow
        var state: String?
        var problem: String?
        var done: Bool { problem != nil || state == "verified" || state == "invalid" }
    }

    func run() async throws {
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
            throw ValidationError("cannot read \(file) as UTF-8 text")
        }
        let parsed = ImportFile.read(text, format: format.flatMap(ImportFile.Format.init))
        note(
            "import: \(parsed.rows.count) rows read (\(parsed.format.rawValue)), \(parsed.problems.count) unreadable, "
                + "\(parsed.skipped) of other stores skipped")
        var tracked = parsed.rows.map { Tracked(line: $0.line, row: $0.row) }
        let started = Date()
        try await post(&tracked, indices: Array(tracked.indices))
        if !noWait {
            while tracked.contains(where: { !$0.done }) {
                progress(tracked, since: started)
                guard Date().timeIntervalSince(started) < timeout else {
                    note("\nimport: still running on the server after \(Int(timeout)) s; run the same command again to follow it")
                    try writeReport(parsed, tracked)
                    throw ExitCode(2)
                }
                try await Task.sleep(for: .seconds(1))
                try await post(&tracked, indices: tracked.indices.filter { !tracked[$0].done })
            }
            progress(tracked, since: started)
            note("")
        }
        let failed = try writeReport(parsed, tracked)
        if failed > 0 { throw ExitCode.failure }
    }

    /// Posts rows in batches and keeps what the server says of each.
    func post(_ tracked: inout [Tracked], indices: [Int]) async throws {
        for start in stride(from: 0, to: indices.count, by: batch) {
            let chunk = Array(indices[start..<min(start + batch, indices.count)])
            struct Body: Encodable { var rows: [ImportRow] }
            struct Answer: Decodable {
                struct Result: Decodable {
                    struct Verification: Decodable {
                        var id: String
                        var state: String
                        var reason: String?
                    }
                    var index: Int
                    var verification: Verification?
                    var error: String?
                    var message: String?
                }
                var results: [Result]
            }
            let answer = try JSONDecoder().decode(
                Answer.self, from: try await send(try JSONEncoder().encode(Body(rows: chunk.map { tracked[$0].row }))))
            for result in answer.results where chunk.indices.contains(result.index) {
                let at = chunk[result.index]
                if let error = result.error {
                    tracked[at].problem = "\(error): \(result.message ?? "")"
                } else if let verification = result.verification {
                    tracked[at].state = verification.state
                    if verification.state == "invalid" { tracked[at].problem = "invalid: \(verification.reason ?? "")" }
                }
            }
        }
    }

    func progress(_ tracked: [Tracked], since started: Date) {
        let verified = tracked.filter { $0.state == "verified" }.count
        let failed = tracked.filter { $0.problem != nil }.count
        let finished = verified + failed
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        let rate = Double(finished) / elapsed
        let left = tracked.count - finished
        let eta = rate > 0 ? Int((Double(left) / rate).rounded()) : nil
        let etaText = eta.map { "\($0 / 60)m\(String(format: "%02d", $0 % 60))s" } ?? "?"
        note(
            "\rimport: \(finished)/\(tracked.count) done (\(verified) verified, \(failed) failed), \(left) pending, "
                + "\(String(format: "%.1f", rate)) rows/s, ETA \(etaText)   ", newline: false)
    }

    /// The failed rows, with their line and why; the count.
    @discardableResult
    func writeReport(_ parsed: ImportFile, _ tracked: [Tracked]) throws -> Int {
        var lines = parsed.problems.map { (line: $0.line, user: "", problem: $0.message) }
        lines += tracked.compactMap { row in row.problem.map { (line: row.line, user: row.row.appUserId, problem: $0) } }
        lines.sort { $0.line < $1.line }
        note("import: \(tracked.filter { $0.state == "verified" }.count) rows imported, \(lines.count) failed")
        // Quoted as the ledger export is (`CSVField`): an id that would run as a formula stays text.
        let rows = lines.map { "\($0.line),\(CSVField.quote($0.user)),\(CSVField.quote($0.problem))" }
        let csv = (["line,app_user_id,problem"] + rows).joined(separator: "\n") + "\n"
        if let report {
            try Data(csv.utf8).write(to: URL(fileURLWithPath: report))
        } else if !lines.isEmpty {
            FileHandle.standardError.write(Data(csv.utf8))
        }
        return lines.count
    }

    func send(_ body: Data) async throws -> Data {
        try await AdminRequest(url: url, adminKey: adminKey, app: app, timeout: .seconds(300)).send(.POST, "/imports", json: body)
    }

    func note(_ text: String, newline: Bool = true) {
        FileHandle.standardError.write(Data((text + (newline ? "\n" : "")).utf8))
    }
}
