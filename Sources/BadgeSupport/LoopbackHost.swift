#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whether a host names the loopback interface, decided once for every client that trusts loopback more (the
/// provider URLs' plain `http://`, the database's default `sslmode`).
public enum LoopbackHost {
    /// Whether `host` (as written in a URL; an IPv6 address with or without brackets) names the loopback
    /// interface: `localhost` (any case), an IPv4 address in 127.0.0.0/8 in strict dotted decimal, or the IPv6
    /// address ::1 (in any of its spellings). Anything else is another host: `127.db.example.com` is a name that
    /// resolves wherever its owner points it, and `127.1` or an octal form is not an address `inet_pton` takes.
    public static func isLoopback(_ host: String) -> Bool {
        var host = host
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            // The first octet, in network byte order.
            return withUnsafeBytes(of: &v4) { $0[0] } == 127
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { bytes in bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1 }
        }
        return false
    }
}
