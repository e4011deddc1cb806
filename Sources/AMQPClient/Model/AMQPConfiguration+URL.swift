import Foundation

extension AMQPConfiguration {
    /// Parses an AMQP URI: `amqp://user:pass@host:port/vhost?heartbeat=30` or `amqps://…`.
    ///
    /// Follows RabbitMQ's URI spec: user, password and vhost are percent-decoded (`%2F` is `/`); a missing path
    /// means the vhost `/`, an empty path (`amqp://host/`) the vhost `""`. Query parameters: `heartbeat` (seconds),
    /// `connection_timeout` (milliseconds), `frame_max`, `channel_max`, `connection_name`, and for TLS `cacertfile`,
    /// `certfile`, `keyfile`, `verify` (`verify_peer` or `verify_none`) and `verify_hostname` (`true`/`false`).
    ///
    /// Foundation's `URLComponents` splits the URL (RFC 3986, invalid characters refused rather than encoded:
    /// characters such as `@`, `/` or `?` in a password must be percent-encoded); only the vhost rule and
    /// RabbitMQ's query keys are read here.
    ///
    /// A cluster is given as a comma-separated list, one URL per node (`amqp://u:p@rabbit-1,amqp://u:p@rabbit-2`):
    /// the list is split only where a comma is followed by `amqp://` or `amqps://`, so a comma inside a password
    /// stays part of it. The URLs must agree on everything but host and port; their nodes are tried in order.
    ///
    /// - Parameter defaultHeartbeatSeconds: the heartbeat to ask for when the URL has no `heartbeat` parameter.
    public init(url: String, defaultHeartbeatSeconds: Int = 30) throws(AMQPError) {
        let urls = Self.split(url)
        try self.init(nodeURL: urls[0], defaultHeartbeatSeconds: defaultHeartbeatSeconds)
        for other in urls.dropFirst() {
            let next = try AMQPConfiguration(nodeURL: other, defaultHeartbeatSeconds: defaultHeartbeatSeconds)
            var comparable = next
            comparable.nodes = nodes
            guard comparable == self else {
                throw AMQPError(
                    .invalidURL,
                    "the node URLs of \"\(Self.redacted(url))\" differ in more than host and port")
            }
            nodes.append(contentsOf: next.nodes)
        }
    }

    /// The URLs of a comma-separated list: split where a comma is followed by a scheme.
    static func split(_ list: String) -> [String] {
        var urls: [String] = []
        var rest = Substring(list)
        while let comma = rest.indices.dropFirst().first(where: { index in
            rest[index] == "," && (rest[index...].hasPrefix(",amqp://") || rest[index...].hasPrefix(",amqps://"))
        }) {
            urls.append(String(rest[..<comma]))
            rest = rest[rest.index(after: comma)...]
        }
        urls.append(String(rest))
        return urls
    }

    private init(nodeURL url: String, defaultHeartbeatSeconds: Int) throws(AMQPError) {
        func fail(_ why: String) -> AMQPError { AMQPError(.invalidURL, "\(why) in AMQP URL \"\(Self.redacted(url))\"") }

        guard let components = URLComponents(string: url, encodingInvalidCharacters: false) else {
            throw fail("not a valid URL")
        }
        guard components.scheme == "amqp" || components.scheme == "amqps",
            let encodedHost = components.percentEncodedHost
        else { throw fail("scheme must be amqp:// or amqps://") }
        if components.fragment != nil { throw fail("fragments are not allowed") }

        // Foundation keeps an IPv6 literal's brackets.
        var host = Substring(encodedHost)
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard let decodedHost = host.removingPercentEncoding else { throw fail("bad percent-encoding in host") }

        guard let username = components.percentEncodedUser.map({ $0.removingPercentEncoding }) ?? "guest",
            let password = components.percentEncodedPassword.map({ $0.removingPercentEncoding }) ?? "guest"
        else { throw fail("bad percent-encoding in user info") }

        if let port = components.port, !(1...65535).contains(port) {
            throw fail("port \"\(port)\" is not a number from 1 to 65535")
        }

        var virtualHost = "/"
        if components.percentEncodedPath.hasPrefix("/") {
            let segment = components.percentEncodedPath.dropFirst()
            if segment.contains("/") { throw fail("the vhost must be one path segment (write / as %2F)") }
            guard let decoded = segment.removingPercentEncoding else { throw fail("bad percent-encoding in vhost") }
            virtualHost = decoded
        }

        self.init(
            host: decodedHost.isEmpty ? "localhost" : decodedHost,
            port: components.port,
            virtualHost: virtualHost,
            username: username,
            password: password,
            heartbeatSeconds: defaultHeartbeatSeconds,
            tls: components.scheme == "amqps" ? TLS() : nil
        )

        for item in components.percentEncodedQueryItems ?? [] {
            // An empty pair (`&&`) is skipped; a key without `=` or with bad percent-encoding is refused.
            if item.name.isEmpty, item.value == nil { continue }
            guard let key = item.name.removingPercentEncoding, let value = item.value?.removingPercentEncoding else {
                throw fail("bad query parameter \"\(item)\"")
            }
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
        func updateTLS(_ change: (inout TLS) throws(AMQPError) -> Void) throws(AMQPError) {
            guard var settings = tls else { throw fail("\(key) is only valid with amqps://") }
            try change(&settings)
            tls = settings
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
            try updateTLS { $0.caCertificatePath = value }
        case "certfile":
            try updateTLS { $0.certificatePath = value }
        case "keyfile":
            try updateTLS { $0.keyPath = value }
        case "verify":
            try updateTLS { settings throws(AMQPError) in
                switch value {
                case "verify_peer": settings.verifyPeer = true
                case "verify_none":
                    settings.verifyPeer = false
                    settings.verifyHostname = false
                default: throw fail("verify must be verify_peer or verify_none")
                }
            }
        case "verify_hostname":
            try updateTLS { settings throws(AMQPError) in
                guard let flag = Bool(value) else { throw fail("verify_hostname must be true or false") }
                settings.verifyHostname = flag
            }
        default:
            throw fail("unknown query parameter \"\(key)\"")
        }
    }

    /// The URL with any password replaced by `***`, for logs and errors, whatever characters the password holds
    /// (even unencoded `/`, `?`, `#`, `:` or `@`, which a URL parser would take for the end of the authority):
    /// everything from the first `:` after the scheme to the last `@` is hidden. A URL without a password but with
    /// an `@` further on loses a little more than its password, never less.
    ///
    /// A comma-separated list of node URLs is redacted URL by URL.
    public static func redacted(_ url: String) -> String {
        split(url).map(redactedOne).joined(separator: ",")
    }

    private static func redactedOne(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        guard let at = rest.lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }
}
