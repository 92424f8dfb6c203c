/// As Apple documents it (developer.apple.com/documentation/storekit/verificationresult): a
/// signed value with StoreKit's on-device verdict on its signature.
@available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, visionOS 1.0, *)
public enum VerificationResult<SignedType> {
    case unverified(SignedType, VerificationResult<SignedType>.VerificationError)
    case verified(SignedType)

    /// As Apple documents it (…/verificationresult/verificationerror).
    public enum VerificationError: Error, Sendable {
        case revokedCertificate
        case invalidCertificateChain
        case invalidDeviceVerification
        case invalidEncoding
        case invalidSignature
        case missingRequiredProperties
    }

    /// The value whatever the verdict (…/verificationresult/unsafepayloadvalue).
    public var unsafePayloadValue: SignedType {
        switch self {
        case .unverified(let value, _), .verified(let value): value
        }
    }

    /// The compact JWS the value was decoded from (…/verificationresult/jwsrepresentation).
    public var jwsRepresentation: String { (unsafePayloadValue as? any SignedByTheStore)?.signedForm ?? "" }
}

extension VerificationResult: Sendable where SignedType: Sendable {}

/// Not StoreKit's: how the stand-in keeps the JWS a value was decoded from.
protocol SignedByTheStore {
    var signedForm: String { get }
}
