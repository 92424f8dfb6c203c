/// Ids (app user ids above all) are compared as the databases compare them: byte for byte in
/// UTF-8. Swift's `==` on `String` treats canonically equivalent spellings as equal (`café`
/// written NFC and NFD), so a user token for one spelling would act for the other while storage
/// keeps them apart: two users in the database, one in authorization. Every comparison that
/// decides who someone is goes through here instead.
extension StringProtocol {
    public func isSameIdentifier(as other: some StringProtocol) -> Bool {
        utf8.elementsEqual(other.utf8)
    }
}
