import Foundation
import Logging

enum LogSetup {
    static func bootstrap(level: String) -> Logger {
        let parsed = Logger.Level(rawValue: level.lowercased()) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = parsed
            return handler
        }
        var logger = Logger(label: "storekeeper")
        logger.logLevel = parsed
        return logger
    }
}
