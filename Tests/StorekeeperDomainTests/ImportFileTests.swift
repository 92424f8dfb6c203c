import StorekeeperDomain
import Testing

/// Files of customers to import, in each format read.
@Suite("import files: JSON lines, CSV and RevenueCat's export")
struct ImportFileTests {
    @Test("JSON lines: one evidence per row; bad lines reported by number; the same row twice read once")
    func jsonLines() {
        let file = ImportFile.read(
            """
            {"appUserId":"ann","originalTransactionId":"2000000001"}
            {"appUserId":"bob","transactionId":"2000000002"}

            {"appUserId":"cy","receipt":"MIIB","transactionId":"1"}
            not json
            {"appUserId":"ann","originalTransactionId":"2000000001"}
            {"appUserId":"dee","originalTransactionId":"12ab"}
            """)
        #expect(file.format == .jsonl)
        #expect(
            file.rows.map(\.row) == [
                ImportRow(appUserId: "ann", evidence: .originalTransactionId("2000000001")),
                ImportRow(appUserId: "bob", evidence: .transactionId("2000000002")),
            ])
        #expect(file.rows.map(\.line) == [1, 2])
        #expect(file.problems.map(\.line) == [4, 5, 7], "\(file.problems)")
        #expect(file.problems.first?.message.contains("exactly one") == true)
    }

    @Test("CSV: a header, quoted fields with commas and quotes, one evidence column per row")
    func csv() {
        let file = ImportFile.read(
            #"""
            app_user_id,original_transaction_id,transaction_id,receipt
            "smith, jo",2000000001,,
            "say ""hi""",,2000000002,
            ann,,,
            bob,1,2,
            """#)
        #expect(file.format == .csv)
        #expect(file.rows.map(\.row.appUserId) == ["smith, jo", "say \"hi\""])
        #expect(file.rows.map(\.row.evidence) == [.originalTransactionId("2000000001"), .transactionId("2000000002")])
        #expect(file.problems.map(\.line) == [4, 5])
        #expect(ImportFile.read("user,receipt\nann,MIIB").problems.map(\.message) == ["no 'app_user_id' column"])
    }

    @Test("RevenueCat's Transactions export: App Store rows only, the app's own id over RevenueCat's anonymous one, the original transaction first")
    func revenueCat() {
        let file = ImportFile.read(
            """
            rc_original_app_user_id,rc_last_seen_app_user_id_alias,country,store,store_transaction_id,original_store_transaction_id,product_identifier
            $RCAnonymousID:87c6,user-42,GB,app_store,2000000009,2000000001,pro.monthly
            $RCAnonymousID:87c6,user-42,GB,app_store,2000000010,2000000001,pro.monthly
            $RCAnonymousID:aaaa,$RCAnonymousID:aaaa,US,app_store,2000000011,,coins
            user-7,user-7,US,play_store,GPA.1234,GPA.1234,pro.monthly
            user-8,user-8,US,app_store,,,pro.monthly
            """)
        #expect(file.format == .revenueCat && file.skipped == 1)
        #expect(
            file.rows.map(\.row) == [
                ImportRow(appUserId: "user-42", evidence: .originalTransactionId("2000000001")),
                ImportRow(appUserId: "$RCAnonymousID:aaaa", evidence: .transactionId("2000000011")),
            ])
        #expect(file.problems.map(\.line) == [6])
    }

    @Test("CSV fields people open in a spreadsheet: a formula stays text, a negative number stays a number, separators are quoted")
    func spreadsheetSafeFields() {
        #expect(CSVField.quote("=HYPERLINK(\"http://x\")") == "\"'=HYPERLINK(\"\"http://x\"\")\"")
        #expect(CSVField.quote("@SUM(A1)") == "'@SUM(A1)" && CSVField.quote("+1 555") == "'+1 555" && CSVField.quote("-x") == "'-x")
        #expect(CSVField.quote("-5") == "-5" && CSVField.quote("ann") == "ann" && CSVField.quote("") == "")
        #expect(CSVField.quote("a,b") == "\"a,b\"" && CSVField.quote("line\nbreak") == "\"line\nbreak\"")
    }
}
