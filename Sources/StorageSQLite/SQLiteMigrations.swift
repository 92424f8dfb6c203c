import GRDB

/// Versioned schema, one file per migration in Migrations/ (named after it). A released
/// migration is never edited; changes are new migrations. The PostgreSQL adapter mirrors the same
/// tables and constraints.
enum SQLiteMigrations {
    /// Every migration, in the order applied.
    static let all: [(name: String, apply: @Sendable (Database) throws -> Void)] = [
        ("M0001_CreateSchema", m0001CreateSchema),
        ("M0002_ProvisionalGrants", m0002ProvisionalGrants),
        ("M0003_Notifications", m0003Notifications),
        ("M0004_RefundReversals", m0004RefundReversals),
        ("M0005_OwnershipClaims", m0005OwnershipClaims),
        ("M0006_Events", m0006Events),
        ("M0007_Webhooks", m0007Webhooks),
        ("M0008_TransactionFields2026", m0008TransactionFields2026),
        ("M0009_AppleHealth", m0009AppleHealth),
        ("M0010_EventWireBody", m0010EventWireBody),
        ("M0011_Entitlements", m0011Entitlements),
        ("M0012_Offerings", m0012Offerings),
        ("M0013_Customers", m0013Customers),
        ("M0014_ImportedRows", m0014ImportedRows),
        ("M0015_Revenue", m0015Revenue),
        ("M0016_AnalyticsIndexes", m0016AnalyticsIndexes),
        ("M0017_CustomerSearch", m0017CustomerSearch),
        ("M0018_KeptFigures", m0018KeptFigures),
        ("M0019_ConsoleSignOuts", m0019ConsoleSignOuts),
        ("M0020_AppleHealthHistory", m0020AppleHealthHistory),
        ("M0021_GapFillRuns", m0021GapFillRuns),
        ("M0022_RenewalSignedAt", m0022RenewalSignedAt),
        ("M0023_AppleCalls", m0023AppleCalls),
        ("M0024_CreditSpends", m0024CreditSpends),
        ("M0025_RefundRequests", m0025RefundRequests),
        ("M0026_WinBackOffers", m0026WinBackOffers),
        ("M0027_CreditSpendKeysPerUser", m0027CreditSpendKeysPerUser),
        ("M0028_AdminTokens", m0028AdminTokens),
        ("M0029_AppTransactions", m0029AppTransactions),
        ("M0030_PriceIncreases", m0030PriceIncreases),
        ("M0031_EntitlementLapses", m0031EntitlementLapses),
        ("M0032_Experiments", m0032Experiments),
        ("M0033_OneOpenExperiment", m0033OneOpenExperiment),
    ]

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for migration in all { migrator.registerMigration(migration.name, migrate: migration.apply) }
        return migrator
    }
}
