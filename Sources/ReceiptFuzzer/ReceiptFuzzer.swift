import AppStoreCrypto
import Foundation

/// libFuzzer entry point: every input must either parse or throw `AppReceiptError`, within the
/// parser's limits; anything else (a crash, a hang, a leak) is a finding.
/// Build and run: see docs/FUZZING.md.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReceiptParser(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    var limits = AppReceiptParser.Limits()
    limits.maximumBytes = 1 << 20
    if let receipt = try? AppReceiptParser(limits: limits).parse(bytes) {
        // Touch every decoded field so lazy paths run too.
        _ = receipt.inAppPurchases.reduce(0) { $0 &+ ($1.transactionId?.count ?? 0) &+ ($1.quantity ?? 0) }
        _ = receipt.environment
    }
    return 0
}

#if FUZZING
/// libFuzzer's driver, called from our own `main` (SwiftPM names every executable's entry point).
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafeRawPointer, Int) -> CInt
) -> CInt
#endif

/// With `-DFUZZING` (and `-sanitize=fuzzer`) this runs libFuzzer; in a plain build it runs the
/// entry point over files given as arguments, so the target builds everywhere and replays crashes.
@main
struct ReceiptFuzzerMain {
    static func main() {
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv) { fuzzReceiptParser($0, $1) })
        #else
        for path in CommandLine.arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            _ = data.withUnsafeBytes { fuzzReceiptParser($0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, $0.count) }
            print("ok \(path)")
        }
        #endif
    }
}
