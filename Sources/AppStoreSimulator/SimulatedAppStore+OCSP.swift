import Crypto
import Foundation
import SwiftASN1
import Synchronization
import X509

/// The simulator's OCSP responder (RFC 6960) for its own intermediate and leaf: answers
/// `good` unless a certificate was revoked through `/sim/pki/revoke`, signed by the issuing
/// CA's key (responder id by key hash), valid for an hour, without echoing the request nonce
/// (as CDN-cached responders do), so a response can be cached per certificate.
extension SimulatedAppStore {
    /// Which of the simulator's certificates `/sim/pki/revoke` names.
    public enum RevocableCertificate: String, Codable, Sendable {
        case leaf, intermediate
    }

    func revoke(_ which: RevocableCertificate, at now: Date) {
        let certificate = which == .leaf ? pki.leaf : pki.intermediate
        revokedSerials.withLock { $0[Self.serialKey(certificate.serialNumber.bytes)] = now }
    }

    static func serialKey(_ bytes: some Collection<UInt8>) -> [UInt8] { Array(bytes.drop { $0 == 0 }) }

    /// The DER OCSPResponse for a DER OCSPRequest; a request that cannot be read gets
    /// `malformedRequest`, one about a certificate the simulator did not issue `unauthorized`.
    /// The answer is current at the simulator's clock (`now`, which a test may have moved
    /// forward) and at the wall clock, which outside verifiers such as Apple's library judge
    /// it by.
    func ocspResponse(to request: [UInt8], now: Date) -> [UInt8] {
        let wall = Date()
        let (earliest, latest) = (min(now, wall), max(now, wall))
        guard let (certID, serial) = try? Self.firstCertID(request) else { return DERBuilder.ocspStatus(1) }
        let issuerKey: P256.Signing.PrivateKey
        let issuer: Certificate
        switch Self.serialKey(serial) {
        case Self.serialKey(pki.leaf.serialNumber.bytes): (issuerKey, issuer) = (pki.intermediateKey, pki.intermediate)
        case Self.serialKey(pki.intermediate.serialNumber.bytes): (issuerKey, issuer) = (pki.rootKey, pki.root)
        default: return DERBuilder.ocspStatus(6)
        }
        stats.record("ocsp.requests")
        let revokedAt = revokedSerials.withLock { $0[Self.serialKey(serial)] }
        let status: [UInt8] =
            if let revokedAt {
                DERBuilder.tlv(0xA1, DERBuilder.tlv(0x18, DERBuilder.generalizedTime(revokedAt)))
            } else {
                DERBuilder.tlv(0x80, [])
            }
        let single = DERBuilder.sequence(
            certID + status + DERBuilder.generalizedTime(earliest.addingTimeInterval(-60), tagged: 0x18)
                + DERBuilder.tlv(0xA0, DERBuilder.generalizedTime(latest.addingTimeInterval(3600), tagged: 0x18)))
        let keyHash = Array(Insecure.SHA1.hash(data: issuer.publicKey.subjectPublicKeyInfoBytes))
        let responseData = DERBuilder.sequence(
            DERBuilder.tlv(0xA2, DERBuilder.tlv(0x04, keyHash)) + DERBuilder.generalizedTime(earliest, tagged: 0x18)
                + DERBuilder.sequence(single))
        guard let signature = try? issuerKey.signature(for: responseData) else { return DERBuilder.ocspStatus(2) }
        let ecdsaWithSHA256: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02]
        let basic = DERBuilder.sequence(
            responseData + DERBuilder.sequence(ecdsaWithSHA256) + DERBuilder.tlv(0x03, [0] + Array(signature.derRepresentation)))
        let basicOID: [UInt8] = [0x06, 0x09, 0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01]
        let responseBytes = DERBuilder.sequence(basicOID + DERBuilder.tlv(0x04, basic))
        return DERBuilder.sequence(DERBuilder.tlv(0x0A, [0]) + DERBuilder.tlv(0xA0, responseBytes))
    }

    /// `OCSPRequest { TBSRequest { [0] version?, [1] requestorName?, requestList SEQUENCE OF
    /// Request { reqCert CertID, … }, [2] extensions? } }` → the first CertID (DER) and its serial.
    static func firstCertID(_ request: [UInt8]) throws -> ([UInt8], ArraySlice<UInt8>) {
        func children(_ node: ASN1Node?) throws -> [ASN1Node] {
            guard let node, case .constructed(let nodes) = node.content else {
                throw ASN1Error.invalidASN1Object(reason: "not an OCSP request")
            }
            return Array(nodes)
        }
        let tbs = try children(try DER.parse(request)).first
        let list = try children(tbs).first { $0.identifier == .sequence }
        let certID = try children(try children(list).first).first
        let idFields = try children(certID)
        guard let certID else { throw ASN1Error.invalidASN1Object(reason: "not an OCSP request") }
        let parts = Array(idFields)
        guard parts.count == 4, case .primitive(let serial) = parts[3].content else {
            throw ASN1Error.invalidASN1Object(reason: "not a CertID")
        }
        return (Array(certID.encodedBytes), serial)
    }
}

/// The few DER encodings the responder writes by hand.
enum DERBuilder {
    static func tlv(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [tag]
        if contents.count < 0x80 {
            out.append(UInt8(contents.count))
        } else {
            var length = contents.count
            var bytes: [UInt8] = []
            while length > 0 {
                bytes.insert(UInt8(length & 0xFF), at: 0)
                length >>= 8
            }
            out.append(0x80 | UInt8(bytes.count))
            out += bytes
        }
        return out + contents
    }

    static func sequence(_ contents: [UInt8]) -> [UInt8] { tlv(0x30, contents) }

    /// GeneralizedTime `YYYYMMDDHHMMSSZ`, as contents or (with `tagged`) as a whole element.
    static func generalizedTime(_ date: Date, tagged: UInt8? = nil) -> [UInt8] {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        let text = Array(formatter.string(from: date).utf8)
        return tagged.map { tlv($0, text) } ?? text
    }

    /// An OCSPResponse with only a (failure) status.
    static func ocspStatus(_ status: UInt8) -> [UInt8] { sequence(tlv(0x0A, [status])) }
}
