import BadgeSupport
import BadgeWire
import Foundation
import NIOCore
import ProviderAuth

/// Where pushes go, with which credentials, and how hard to try.
public struct DeliveryConfiguration: Sendable {
    /// How the worker authenticates to APNs.
    public enum APNsCredentials: Sendable {
        /// Token auth: ES256 provider tokens signed with a `.p8` key.
        case token(APNsSigningKey)
        /// Certificate auth: a client certificate chain and its private key (PEM files), presented in TLS.
        case certificate(chainFile: String, keyFile: String)
    }

    /// Base URL of APNs for production devices (`https://api.push.apple.com`, or a local `badgepipe sink`).
    public var apnsBaseURL: String
    /// Base URL of APNs for devices registered with `"environment": "sandbox"`.
    public var apnsSandboxBaseURL: String
    /// Base URL of the FCM v1 endpoint (`https://fcm.googleapis.com`, or a local `badgepipe sink`).
    public var fcmBaseURL: String
    /// APNs credentials; nil sends none (only a local sink over `http://` accepts that).
    public var apnsCredentials: APNsCredentials?
    /// The FCM service account; nil sends no `authorization` (only a local sink over `http://` accepts that).
    public var fcmCredentials: ServiceAccount?
    /// The apps the deployment serves (`--apps-file`), each with its own credentials and topics; empty: one app,
    /// ``AppConfiguration/defaultName``, made of ``apnsCredentials`` and ``fcmCredentials`` for the providers in
    /// ``providers`` (the single-app settings). See ``registry``.
    public var apps: [AppConfiguration] = []
    /// The app of devices that name none and whose topic no app owns (optional with one app).
    public var defaultApp: String?
    /// The providers this deployment delivers to. A push to a device of another provider is not sent: the sender
    /// answers ``PushOutcome/notConfigured(reason:)`` and the device is kept, so that configuring the provider
    /// later serves it. The URLs and credentials of a provider not in the set are not used (nor checked).
    public var providers: Set<PushProvider>
    /// A PEM file of extra trusted root certificates (a test sink's self-signed certificate, say).
    public var trustedRootsFile: String?
    /// HTTP clients per provider: over HTTP/2 each keeps one connection per host, so this is the number of
    /// connections pushes are spread over.
    public var clientsPerProvider: Int
    /// See ``clientsPerProvider`` (`--provider-connections`).
    public static let defaultClientsPerProvider = 1
    /// Speak HTTP/1.1 even over TLS (for measurements, or a proxy that only speaks it; APNs requires HTTP/2).
    public var http1Only: Bool = false
    /// The ceiling of the first retry delay after a 429, a 5xx, a timeout or a network error; it doubles with each
    /// further attempt (delays are drawn with full jitter below the ceiling).
    public var initialBackoff: Duration
    /// The largest ceiling of a retry delay (a `Retry-After` from the provider may ask for more; up to
    /// `maxRetryAfter` is honoured).
    public var maxBackoff: Duration
    /// How long a push may keep failing before it is given up (counted and logged).
    public var maxPushAge: Duration
    /// Cap on a provider's `Retry-After`.
    public var maxRetryAfter: Duration
    /// Per-request timeout.
    public var requestTimeout: Duration
    /// See ``requestTimeout``, in milliseconds (`--provider-timeout`).
    public static let defaultRequestTimeoutMilliseconds = 10_000

    /// Creates a configuration; the default URLs are a local sink. `apnsSandboxBaseURL` defaults to
    /// `apnsBaseURL`: one stand-in serves both environments unless told otherwise.
    public init(
        apnsBaseURL: String = "http://127.0.0.1:8787",
        apnsSandboxBaseURL: String? = nil,
        fcmBaseURL: String = "http://127.0.0.1:8787",
        apnsCredentials: APNsCredentials? = nil,
        fcmCredentials: ServiceAccount? = nil,
        providers: Set<PushProvider> = Set(PushProvider.allCases),
        trustedRootsFile: String? = nil,
        clientsPerProvider: Int = DeliveryConfiguration.defaultClientsPerProvider,
        initialBackoff: Duration = Backoff.pushRetry.initial,
        maxBackoff: Duration = Backoff.pushRetry.maximum,
        maxPushAge: Duration = .seconds(24 * 3600),
        maxRetryAfter: Duration = .seconds(60),
        requestTimeout: Duration = .milliseconds(DeliveryConfiguration.defaultRequestTimeoutMilliseconds)
    ) {
        self.apnsBaseURL = apnsBaseURL
        self.apnsSandboxBaseURL = apnsSandboxBaseURL ?? apnsBaseURL
        self.fcmBaseURL = fcmBaseURL
        self.apnsCredentials = apnsCredentials
        self.fcmCredentials = fcmCredentials
        self.providers = providers
        self.trustedRootsFile = trustedRootsFile
        self.clientsPerProvider = clientsPerProvider
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.maxPushAge = maxPushAge
        self.maxRetryAfter = maxRetryAfter
        self.requestTimeout = requestTimeout
    }

    /// The apps pushes go with: ``apps``, or the one app of the single-app settings.
    public var effectiveApps: [AppConfiguration] {
        guard apps.isEmpty else { return apps }
        return [
            AppConfiguration(
                name: AppConfiguration.defaultName,
                apns: providers.contains(.apns) ? AppConfiguration.APNs(credentials: apnsCredentials) : nil,
                fcm: providers.contains(.fcm) ? AppConfiguration.FCM(credentials: fcmCredentials) : nil)
        ]
    }

    /// Which app serves each push.
    public var registry: AppRegistry {
        AppRegistry(apps: effectiveApps, defaultApp: apps.isEmpty ? AppConfiguration.defaultName : defaultApp)
    }

    /// Sets ``apps`` and ``defaultApp`` (from an apps file), and ``providers`` to those some app configures.
    public mutating func serve(apps: [AppConfiguration], defaultApp: String?) {
        self.apps = apps
        self.defaultApp = defaultApp
        var providers: Set<PushProvider> = []
        for app in apps {
            if app.apns != nil { providers.insert(.apns) }
            if app.fcm != nil { providers.insert(.fcm) }
        }
        self.providers = providers
    }

    /// The problems that keep a worker from starting: no provider at all, a configured provider's URL that is not
    /// `http://` or `https://` with a host (every push would be refused by the HTTP client, for good), a configured
    /// provider reached over `https://` without credentials (every push would be refused), or credentials that
    /// would go over plain `http://` to a host other than loopback (readable by anyone on the way), named with the
    /// setting to fix; empty when none. A provider not in ``providers`` is not checked.
    public var problems: [String] {
        var problems: [String] = []
        let apns = providers.contains(.apns)
        let fcm = providers.contains(.fcm)
        if !apns && !fcm {
            problems.append(
                "no push provider is configured: give APNs credentials (--apns-key-file with --apns-key-id and "
                    + "--apns-team-id, or --apns-cert-file) or --apns-url, and/or FCM credentials "
                    + "(--fcm-credentials-file) or --fcm-url")
        }
        let apnsURLs = apns ? [("--apns-url", apnsBaseURL), ("--apns-sandbox-url", apnsSandboxBaseURL)] : []
        let fcmURLs = fcm ? [("--fcm-url", fcmBaseURL)] : []
        for (name, url) in apnsURLs + fcmURLs where !Self.isProviderURL(url) {
            problems.append("\(name) must be an http:// or https:// URL with a host and no query, not \"\(url)\"")
        }
        let single = apps.isEmpty
        let apnsApps = effectiveApps.compactMap { app in app.apns.map { (app.name, $0) } }
        let fcmApps = effectiveApps.compactMap { app in app.fcm.map { (app.name, $0) } }
        for (name, url) in apnsURLs where Self.isHTTPS(url) {
            for (app, _) in apnsApps.filter({ $0.1.credentials == nil }) {
                problems.append(
                    single
                        ? "\(name) is \(url) but no APNs credentials are set: give --apns-key-file with --apns-key-id "
                            + "and --apns-team-id, or --apns-cert-file with --apns-cert-key-file"
                        : "\(name) is \(url) but app \(app) has no APNs credentials: give it key_file, key_id and "
                            + "team_id, or cert_file and cert_key_file")
            }
        }
        if fcm, Self.isHTTPS(fcmBaseURL) {
            for (app, _) in fcmApps.filter({ $0.1.credentials == nil }) {
                problems.append(
                    single
                        ? "--fcm-url is \(fcmBaseURL) but no FCM credentials are set: give --fcm-credentials-file "
                            + "(a service-account JSON file)"
                        : "--fcm-url is \(fcmBaseURL) but app \(app) has no FCM credentials: give it credentials_file "
                            + "(a service-account JSON file)")
            }
        }
        for (name, url) in apnsURLs
        where apnsApps.contains(where: { $0.1.credentials != nil }) && Self.isProviderURL(url)
            && Self.isCleartextToAnotherHost(url)
        {
            problems.append(Self.cleartextProblem(name: name, url: url, what: "the APNs credentials"))
        }
        if fcm, fcmApps.contains(where: { $0.1.credentials != nil }), Self.isProviderURL(fcmBaseURL),
            Self.isCleartextToAnotherHost(fcmBaseURL)
        {
            problems.append(Self.cleartextProblem(name: "--fcm-url", url: fcmBaseURL, what: "the FCM access token"))
        }
        for (app, side) in fcmApps {
            guard let tokenURI = side.credentials?.tokenURI, Self.isCleartextToAnotherHost(tokenURI) else { continue }
            problems.append(
                (single ? "--fcm-credentials-file" : "app \(app)'s credentials_file")
                    + " names the token_uri \(tokenURI): the worker will not send its signed assertion "
                    + "over plain http:// to a host other than loopback (127.0.0.0/8, ::1, localhost); use https://")
        }
        if !single {
            if let defaultApp, !apps.contains(where: { $0.name == defaultApp }) {
                problems.append("the default app \(defaultApp) is not one of the apps")
            }
            var names: Set<String> = []
            for app in apps where !names.insert(app.name).inserted {
                problems.append("the app \(app.name) is declared twice")
            }
        }
        if clientsPerProvider < 1 { problems.append("--provider-connections must be at least 1") }
        return problems
    }

    /// The configured providers in a sentence for the log: "APNs and FCM", "APNs only", "FCM only" or "none".
    public var providersDescription: String {
        switch (providers.contains(.apns), providers.contains(.fcm)) {
        case (true, true): "APNs and FCM"
        case (true, false): "APNs only"
        case (false, true): "FCM only"
        case (false, false): "none"
        }
    }

    static func isHTTPS(_ url: String) -> Bool { url.lowercased().hasPrefix("https:") }

    private static func cleartextProblem(name: String, url: String, what: String) -> String {
        "\(name) is \(url): the worker will not send \(what) over plain http:// to a host other than loopback "
            + "(127.0.0.0/8, ::1, localhost); use https://, or a loopback address for a local sink"
    }

    /// Whether `url` is plain `http://` (any case) to a host that is not loopback: where the worker refuses to send
    /// provider credentials. False for `https://`, for `http://` to 127.0.0.0/8, `::1` or `localhost`, and for
    /// anything that is not an `http` URL.
    public static func isCleartextToAnotherHost(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "http" else {
            return false
        }
        return !isLoopbackHost(components.percentEncodedHost ?? "")
    }

    /// Whether `host` (as written in a URL, an IPv6 address with or without brackets) names the loopback
    /// interface: `localhost` (any case), an IPv4 address in 127.0.0.0/8 (dotted decimal), or the IPv6 address ::1
    /// (in any of its spellings). Anything else counts as another host.
    public static func isLoopbackHost(_ host: String) -> Bool {
        LoopbackHost.isLoopback(host)
    }

    /// Apple's APNs host for production devices.
    public static let appleAPNsURL = "https://api.push.apple.com"
    /// Apple's APNs host for sandbox devices (development builds).
    public static let appleAPNsSandboxURL = "https://api.sandbox.push.apple.com"
    /// Google's FCM v1 host.
    public static let googleFCMURL = "https://fcm.googleapis.com"

    /// Where sandbox devices go when `--apns-sandbox-url` is not set, given `--apns-url` (nil when that is not set
    /// either): Apple's sandbox host while production devices go to Apple (a sandbox token sent to the production
    /// host is answered `BadDeviceToken`, and its device would be deactivated for good), otherwise the same URL as
    /// production devices, so that one stand-in (a `badgepipe sink`, a proxy) serves both environments.
    public static func defaultSandboxURL(apnsURL: String?) -> String {
        let appleHost = URLComponents(string: appleAPNsURL)?.host
        guard let apnsURL, URLComponents(string: apnsURL)?.host?.lowercased() != appleHost else {
            return appleAPNsSandboxURL
        }
        return apnsURL
    }

    /// `http://` or `https://` (any case), a host, and nothing after the path.
    static func isProviderURL(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { return false }
        return components.query == nil && components.fragment == nil
    }
}
