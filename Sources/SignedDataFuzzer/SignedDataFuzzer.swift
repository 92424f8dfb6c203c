import AppStoreCrypto
import AppStoreModels
import Foundation
import StorekeeperWire
import SwiftASN1
import X509

/// libFuzzer entry point for the JWS side: the compact-JWS reader (parts, base64url, header
/// JSON, limits), the certificates in `x5c`, and the payload decoders for transactions, renewal
/// infos, notifications (and their nested JWS) and app transactions. Every input must decode or
/// fail with an error; a crash, hang or leak is a finding. Build and run: docs/FUZZING.md.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSignedData(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    read(text, depth: 0)
    return 0
}

func read(_ text: String, depth: Int) {
    guard let jws = try? CompactJWS(text) else { return }
    for entry in jws.header.x5c ?? [] {
        if let der = Data(base64Encoded: entry) { _ = try? Certificate(derEncoded: Array(der)) }
    }
    let decoder = JSONDecoder()
    let payload = Data(jws.payload)
    _ = try? decoder.decode(SignedTransaction.self, from: payload)
    _ = try? decoder.decode(SignedRenewalInfo.self, from: payload)
    _ = try? decoder.decode(SignedAppTransaction.self, from: payload)
    // The one-pass reader the verifier uses: it must read what Foundation reads (when both
    // accept the bytes), and the payload types decode from its value without crashing.
    if let ours = try? JSONValue.parse(jws.payload) {
        if let foundation = try? decoder.decode(JSONValue.self, from: payload), foundation != ours {
            fatalError("JSON readers disagree: \(foundation) vs \(ours)")
        }
        _ = try? ours.decode(SignedTransaction.self)
        _ = try? ours.decode(SignedRenewalInfo.self)
        _ = try? ours.decode(SignedAppTransaction.self)
        _ = try? ours.decode(NotificationPayload.self)
    }
    if let notification = try? decoder.decode(NotificationPayload.self, from: payload), depth < 2 {
        for nested in [notification.data?.signedTransactionInfo, notification.data?.signedRenewalInfo].compactMap({ $0 }) {
            read(nested, depth: depth + 1)
        }
    }
}

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafeRawPointer, Int) -> CInt
) -> CInt
#endif

/// With `-DFUZZING` (and `-sanitize=fuzzer`) this runs libFuzzer; in a plain build it replays
/// the files given as arguments.
@main
struct SignedDataFuzzerMain {
    static func main() {
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv) { fuzzSignedData($0, $1) })
        #else
        for path in CommandLine.arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            _ = data.withUnsafeBytes { fuzzSignedData($0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, $0.count) }
            print("ok \(path)")
        }
        #endif
    }
}
