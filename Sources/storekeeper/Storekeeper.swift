import ArgumentParser
import StorekeeperServer

/// The `storekeeper` command. Each subcommand reads its options and calls into the libraries.
@main
struct Storekeeper: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storekeeper",
        abstract: "Verifies App Store purchases and tells your backend what each user owns.",
        version: StorekeeperVersion.current,
        subcommands: [
            Serve.self, Worker.self, SimulatorCommand.self, Migrate.self, Verify.self, Inspect.self, AppleCommand.self, ImportCommand.self,
            ConsolePasswordCommand.self, RecomputeLedger.self, StoreKitConfigCommand.self,
        ],
        defaultSubcommand: Serve.self)
}
