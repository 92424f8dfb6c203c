import ArgumentParser
import Foundation
import StorekeeperTesting

/// Stops and starts the throwaway cluster `scripts/postgres.sh start` made, with its own
/// `pg_ctl` (as the unprivileged user that owns it when this runs as root).
struct PostgresControl {
    let dataDirectory: String
    let binaries: String

    /// Reads the state file: the cluster's directory, then its binaries' directory.
    init(stateFile: String) throws {
        let lines = ((try? String(contentsOfFile: stateFile, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        guard lines.count >= 2 else { throw ValidationError("\(stateFile) is not a state file of scripts/postgres.sh") }
        dataDirectory = lines[0]
        binaries = lines[1]
    }

    /// `pg_ctl stop -m immediate`: every backend quits at once, as in a crash; recovery replays the WAL.
    func stopImmediately() throws {
        try pgctl("-D '\(dataDirectory)/data' -m immediate -w stop")
    }

    func start() throws {
        try pgctl("-D '\(dataDirectory)/data' -l '\(dataDirectory)/server.log' -w -t 60 start")
    }

    private func pgctl(_ arguments: String) throws {
        let command = "'\(binaries)/pg_ctl' \(arguments) >/dev/null"
        let shell = getuid() == 0 ? ["-c", "su -s /bin/sh storekeeper-pg -c \"\(command)\""] : ["-c", command]
        let process = try SpawnedProcess(executable: "/bin/sh", arguments: shell)
        guard case .exited(0) = process.waitUntilExit() else { throw ValidationError("pg_ctl \(arguments) failed") }
    }
}
