extension AMQPConfiguration {
    /// Parses an AMQP URI: `amqp://user:pass@host:port/vhost?heartbeat=30` or `amqps://…`.
    ///
    /// Follows RabbitMQ's URI spec: user, password and vhost are percent-decoded (`%2F` is `/`); a missing path
    /// means the vhost `/`, an empty path (`amqp://host/`) the vhost `""`. Query parameters: `heartbeat` (seconds),
    /// `connection_timeout` (milliseconds), `frame_max`, `channel_max`, `connection_name`, and for TLS `cacertfile`,
    /// `certfile`, `keyfile`, `verify` (`verify_peer` or `verify_none`) and `verify_hostname` (`true`/`false`).
    public init(url: String) throws(AMQPError) {
        func fail(_ why: String) -> AMQPError { AMQPError(.invalidURL, "\(why) in AMQP URL \"\(Self.redacted(url))\"") }

        let isTLS: Bool
        var rest: Substring
        if url.hasPrefix("amqp://") {
            isTLS = false
            rest = url.dropFirst("amqp://".count)
        } else if url.hasPrefix("amqps://") {
            isTLS = true
            rest = url.dropFirst("amqps://".count)
        } else {
            throw fail("scheme must be amqp:// or amqps://")
        }

        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        if rest.contains("#") { throw fail("fragments are not allowed") }

        var path: Substring?
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }

        var username = "guest"
        var password = "guest"
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                guard let user = Self.percentDecode(userInfo[..<colon]),
                    let pass = Self.percentDecode(userInfo[userInfo.index(after: colon)...])
                else { throw fail("bad percent-encoding in user info") }
                username = user
                password = pass
            } else {
                guard let user = Self.percentDecode(userInfo) else { throw fail("bad percent-encoding in user name") }
                username = user
            }
        }

        var host = ""
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw fail("unterminated IPv6 address") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw fail("unexpected text after IPv6 address") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.firstIndex(of: ":") {
            host = String(rest[..<colon])
            portText = rest[rest.index(after: colon)...]
        } else {
            host = String(rest)
        }
        if host.isEmpty { host = "localhost" }
        guard let decodedHost = Self.percentDecode(Substring(host)) else { throw fail("bad percent-encoding in host") }

        var port: Int?
        if let portText, !portText.isEmpty {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw fail("port \"\(portText)\" is not a number from 1 to 65535")
            }
            port = value
        }

        var virtualHost = "/"
        if let path {
            if path.contains("/") { throw fail("the vhost must be one path segment (write / as %2F)") }
            guard let decoded = Self.percentDecode(path) else { throw fail("bad percent-encoding in vhost") }
            virtualHost = decoded
        }

        self.init(
            host: decodedHost,
            port: port,
            virtualHost: virtualHost,
            username: username,
            password: password,
            tls: isTLS ? TLS() : nil
        )

        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let key = Self.percentDecode(parts[0]), let value = Self.percentDecode(parts[1])
            else { throw fail("bad query parameter \"\(pair)\"") }
            try applyQueryParameter(key: key, value: value, fail: fail)
        }
    }

    private mutating func applyQueryParameter(
        key: String,
        value: String,
        fail: (String) -> AMQPError
    ) throws(AMQPError) {
        func integer(_ range: ClosedRange<Int>) throws(AMQPError) -> Int {
            guard let number = Int(value), range.contains(number) else {
                throw fail("\(key) must be an integer from \(range.lowerBound) to \(range.upperBound)")
            }
            return number
        }
        func requireTLS() throws(AMQPError) -> TLS {
            guard let tls else { throw fail("\(key) is only valid with amqps://") }
            return tls
        }
        switch key {
        case "heartbeat":
            heartbeatSeconds = try integer(0...65535)
        case "connection_timeout":
            connectTimeoutSeconds = Double(try integer(1...3_600_000)) / 1000
        case "frame_max":
            frameMax = try integer(4096...Int(Int32.max))
        case "channel_max":
            channelMax = try integer(0...65535)
        case "connection_name":
            connectionName = value
        case "cacertfile":
            var settings = try requireTLS()
            settings.caCertificatePath = value
            tls = settings
        case "certfile":
            var settings = try requireTLS()
            settings.certificatePath = value
            tls = settings
        case "keyfile":
            var settings = try requireTLS()
            settings.keyPath = value
            tls = settings
        case "verify":
            var settings = try requireTLS()
            switch value {
            case "verify_peer": settings.verifyPeer = true
            case "verify_none":
                settings.verifyPeer = false
                settings.verifyHostname = false
            default: throw fail("verify must be verify_peer or verify_none")
            }
            tls = settings
        case "verify_hostname":
            var settings = try requireTLS()
            guard let flag = Bool(value) else { throw fail("verify_hostname must be true or false") }
            settings.verifyHostname = flag
            tls = settings
        default:
            throw fail("unknown query parameter \"\(key)\"")
        }
    }

    /// Decodes `%XX` escapes; nil when an escape is malformed or the result is not UTF-8.
    static func percentDecode(_ text: Substring) -> String? {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(Self.hexValue),
                    let low = iterator.next().flatMap(Self.hexValue)
                else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The URL with any password replaced by `***`, for logs and errors, whatever characters the password holds
    /// (even unencoded `/`, `?`, `#`, `:` or `@`, which a URL parser would take for the end of the authority):
    /// everything from the first `:` after the scheme to the last `@` is hidden. A URL without a password but with
    /// an `@` further on loses a little more than its password, never less.
    public static func redacted(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        guard let at = rest.lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }
}
