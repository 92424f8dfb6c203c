import ArgumentParser
import Foundation
import StorekeeperServer

/// Hashes an operator's password for `console.operators` (docs/CONSOLE.md). Reads it from
/// standard input, never from an argument (which `ps` and shell history would keep).
struct ConsolePasswordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console-password",
        abstract: "Read a password on standard input; print its scrypt hash for console.operators (name:role:hash).")

    @Option(help: "Operator name: print the whole entry, name:role:hash.") var name: String?
    @Option(help: "admin or read_only (with --name).") var role: String = "read_only"

    func validate() throws {
        guard ["admin", "read_only"].contains(role) else { throw ValidationError("--role must be admin or read_only") }
    }

    func run() throws {
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw ValidationError("no password on standard input")
        }
        let hash = try ConsoleSettings.hashPassword(line)
        print(name.map { "\($0):\(role):\(hash)" } ?? hash)
    }
}
