import BadgeSupport
import Hummingbird

/// What keeps the sink, a local web app on a developer's machine, out of reach of the web pages that developer's
/// browser has open. On the inspection API and the web view (the push endpoints and `/token` are for provider
/// clients and are left alone):
/// - the `Host`, when there is one, must name the sink: a loopback name or address, the configured host, a name given with
///   `--allowed-host`, or (when it listens on every interface) an IP address or a single-label name such as a
///   compose service's; a page that rebinds its own domain to 127.0.0.1 (DNS rebinding) gets `403`;
/// - a request with an `Origin` must come from a page of such a host (`403` otherwise, `null` included), and a
///   state-changing one (`POST`, `PUT`, `PATCH`, `DELETE`) with a body must say `Content-Type: application/json`
///   (`415` otherwise): a cross-site form can send neither, and a cross-site `fetch` that could would first ask
///   with a preflight the sink never grants;
/// - every answer (the page, its scripts and styles, the API's JSON) says `X-Content-Type-Options: nosniff` and
///   carries the web view's Content-Security-Policy, which allows only its own scripts, styles and connections and
///   no framing (`frame-ancestors 'none'`).
struct LocalWebGuard: RouterMiddleware {
    typealias Context = SinkRequestContext

    /// The sink's page may load only its own files and talk only to the sink, and nobody may frame it.
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The configured host (lowercased, without brackets).
    let host: String
    /// More names the `Host` may carry (`--allowed-host`), lowercased.
    let allowedHosts: Set<String>

    init(host: String, allowedHosts: [String]) {
        self.host = Self.bare(host.lowercased())
        self.allowedHosts = Set(allowedHosts.map { Self.bare($0.lowercased()) })
    }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let path = request.uri.path
        guard !Self.isProviderPath(path) else { return try await next(request, context) }
        // A request without a Host (HTTP/1.0, a raw test client) is no browser's.
        let authority = request.head.authority ?? ""
        guard authority.isEmpty || allows(authority: authority) else {
            throw SinkError(
                code: .forbiddenHost, message: "the Host \(authority.prefix(100)) does not name this sink",
                httpStatus: 403)
        }
        // Browsers send an Origin with every request that changes state, and with a read from another site's
        // page: either is refused unless the page is the sink's own.
        if let origin = request.headers[.origin], !allows(origin: origin, requestAuthority: authority) {
            throw SinkError(
                code: .forbiddenOrigin, message: "requests from the page at \(origin.prefix(100)) are refused",
                httpStatus: 403)
        }
        switch request.method {
        case .post, .put, .patch, .delete:
            if request.method != .delete || request.headers[.contentType] != nil {
                let type = request.headers[.contentType]?.lowercased() ?? ""
                let json = type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) }
                guard json == "application/json" || (request.method == .delete && type.isEmpty) else {
                    throw SinkError(
                        code: .unsupportedMediaType, message: "the body must be application/json", httpStatus: 415)
                }
            }
        default:
            break
        }
        // The page and its files, and the API's answers too: none is to be sniffed as another type or framed.
        var response = try await next(request, context)
        response.headers[.init("X-Content-Type-Options")!] = "nosniff"
        response.headers[.init("Content-Security-Policy")!] = Self.contentSecurityPolicy
        response.headers[.init("X-Frame-Options")!] = "DENY"
        response.headers[.init("Referrer-Policy")!] = "no-referrer"
        return response
    }

    /// The push endpoints and the token endpoint: called by provider clients, with their own content types.
    static func isProviderPath(_ path: String) -> Bool {
        path.hasPrefix("/3/device/") || path.hasPrefix("/sandbox/3/device/")
            || (path.hasPrefix("/v1/projects/") && path.hasSuffix("/messages:send")) || path == "/token"
    }

    /// Whether `authority` (`host[:port]`) names this sink.
    func allows(authority: String) -> Bool {
        let name = Self.hostPart(of: authority.lowercased())
        guard !name.isEmpty else { return false }
        if LoopbackHost.isLoopback(name) || name == host || allowedHosts.contains(name) { return true }
        // Listening on every interface (a container): other containers call it by an address or a service name.
        if host.isEmpty || host == "0.0.0.0" || host == "::" {
            return Self.isIPAddress(name) || !name.contains(".")
        }
        return false
    }

    /// Whether `origin` (`scheme://host[:port]`) is a page of this sink: one served from the very `Host` the
    /// request names (same host and port: another local server's page, on another port, is another site), or
    /// from a name given with `--allowed-host` (a proxy's, whatever `Host` it sends on).
    func allows(origin: String, requestAuthority: String) -> Bool {
        let lowered = origin.lowercased()
        guard let separator = lowered.range(of: "://"),
            ["http", "https"].contains(String(lowered[..<separator.lowerBound]))
        else { return false }
        let originAuthority = String(lowered[separator.upperBound...])
        guard allows(authority: originAuthority) else { return false }
        if allowedHosts.contains(Self.hostPart(of: originAuthority)) { return true }
        // Without a Host (no browser's request), the name alone.
        return requestAuthority.isEmpty || originAuthority == requestAuthority.lowercased()
    }

    /// The host of `host[:port]` (an IPv6 address in brackets without them).
    static func hostPart(of authority: String) -> String {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return "" }
            return String(authority[authority.index(after: authority.startIndex)..<close])
        }
        if let colon = authority.lastIndex(of: ":") { return String(authority[..<colon]) }
        return authority
    }

    private static func bare(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    private static func isIPAddress(_ name: String) -> Bool {
        name.contains(":") || name.split(separator: ".").count == 4 && name.allSatisfy { $0.isNumber || $0 == "." }
    }
}
