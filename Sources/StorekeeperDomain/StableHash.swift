/// The small, stable hashes the domain derives ids and assignments from: the same value on every
/// machine and version, so event ids and experiment arms never move.
public enum StableHash {
    /// 64-bit FNV-1a over the UTF-8 of `parts`, joined by a zero byte.
    public static func fnv1a(_ parts: [String]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in parts.map({ Array($0.utf8) }).joined(separator: [0]) {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return hash
    }

    /// SplitMix64's finalizer: its avalanche spreads inputs that differ in one bit.
    public static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
