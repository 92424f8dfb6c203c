public import Foundation
import SwiftASN1
public import X509

/// A certificate as operators hand it over on the command line: a PEM file or raw DER.
public enum CertificateFile {
    public static func certificate(fileContents data: Data) throws -> Certificate {
        let text = String(decoding: data, as: UTF8.self)
        return text.contains("BEGIN CERTIFICATE") ? try Certificate(pemEncoded: text) : try Certificate(derEncoded: Array(data))
    }
}
