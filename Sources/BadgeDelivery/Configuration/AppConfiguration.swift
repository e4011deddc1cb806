import BadgeCore
import BadgeSupport
import BadgeWire
import ProviderAuth

/// One app a deployment serves: its credentials per provider, and the APNs topics it owns.
///
/// A push goes with its device's app (`device.app`), else the app that owns its APNs topic, else the deployment's
/// default app (``AppRegistry``). Apps that share an account (an APNs key, a certificate, a service account) share
/// its HTTP/2 connections and provider tokens; apps of different accounts never share a connection.
public struct AppConfiguration: Sendable {
    /// The app's APNs side.
    public struct APNs: Sendable {
        /// Its credentials; nil sends none (only a local sink over `http://` accepts that).
        public var credentials: DeliveryConfiguration.APNsCredentials?
        /// The bundle ids it owns: a device registered with one of them without naming an app is this app's. The
        /// first is the `apns-topic` of its devices registered without a topic; none: the deployment's default.
        public var topics: [String]
        /// The environment of its devices registered without one.
        public var environment: APNsEnvironment

        /// Creates an app's APNs side.
        public init(
            credentials: DeliveryConfiguration.APNsCredentials?, topics: [String] = [],
            environment: APNsEnvironment = .production
        ) {
            self.credentials = credentials
            self.topics = topics
            self.environment = environment
        }
    }

    /// The app's FCM side.
    public struct FCM: Sendable {
        /// Its service account; nil sends no `authorization` (only a local sink over `http://` accepts that).
        public var credentials: ServiceAccount?
        /// Its Firebase project: nil, the service account's `project_id`, else the deployment's default.
        public var project: String?

        /// Creates an app's FCM side.
        public init(credentials: ServiceAccount?, project: String? = nil) {
            self.credentials = credentials
            self.project = project
        }
    }

    /// Its name, as devices name it (`device.app`): 1-64 of `[A-Za-z0-9._-]`.
    public var name: String
    /// Its APNs side; nil: its APNs devices are refused (`provider_not_configured`).
    public var apns: APNs?
    /// Its FCM side; nil: its FCM devices are refused (`provider_not_configured`).
    public var fcm: FCM?

    /// Creates an app.
    public init(name: String, apns: APNs? = nil, fcm: FCM? = nil) {
        self.name = name
        self.apns = apns
        self.fcm = fcm
    }

    /// The name of the one app of a configuration given by the single-app settings (`--apns-key-file`, …).
    public static let defaultName = "default"

    /// Whether `name` is a valid app name: 1-64 of `[A-Za-z0-9._-]`.
    public static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy(EventDecoder.isAppByte)
    }

    /// The account its `provider` side uses, by which connections and provider tokens are shared; nil without
    /// that side.
    func account(_ provider: PushProvider) -> ProviderAccount? {
        switch provider {
        case .apns:
            guard let apns else { return nil }
            switch apns.credentials {
            case .token(let key): return ProviderAccount(provider: .apns, id: "team \(key.teamID) key \(key.keyID)")
            case .certificate(let chain, _): return ProviderAccount(provider: .apns, id: "certificate \(chain)")
            case nil: return ProviderAccount(provider: .apns, id: "no credentials")
            }
        case .fcm:
            guard let fcm else { return nil }
            return ProviderAccount(
                provider: .fcm, id: fcm.credentials.map { "service account \($0.clientEmail)" } ?? "no credentials")
        }
    }
}

/// A provider account: what a provider authenticates (an APNs team's key, an APNs certificate, a Google service
/// account). Each has its own HTTP/2 connections and provider tokens.
struct ProviderAccount: Hashable, Sendable, CustomStringConvertible {
    var provider: PushProvider
    var id: String

    var description: String { "\(provider.displayName) \(id)" }
}

/// Which app serves a push (a pure function of the configuration, tested directly).
public struct AppRegistry: Sendable {
    /// Why no app serves a push: it is refused unsent (``Code/providerNotConfigured``).
    public struct Unserved: Error, Sendable, Equatable, CustomStringConvertible {
        /// A typed, machine-readable error code; its ``rawValue`` is the `reason` label of the refusal's metric.
        public typealias Code = ErrorCode<AppRegistry.Unserved>

        /// The error's code.
        public var code: Code
        /// Why, in a sentence.
        public var message: String

        /// Creates an error.
        public init(code: Code = .providerNotConfigured, message: String) {
            self.code = code
            self.message = message
        }

        /// `code: message`.
        public var description: String { "\(code): \(message)" }
    }

    /// The apps, by name.
    public let apps: [String: AppConfiguration]
    /// The app of pushes whose device names none and whose topic no app owns.
    public let defaultApp: String?
    /// The app that owns each APNs topic.
    private let topicOwners: [String: String]

    /// A registry of `apps` (names and topics unique, see ``DeliveryConfiguration/problems``).
    public init(apps: [AppConfiguration], defaultApp: String?) {
        var byName: [String: AppConfiguration] = [:]
        var owners: [String: String] = [:]
        for app in apps {
            byName[app.name] = byName[app.name] ?? app
            for topic in app.apns?.topics ?? [] where owners[topic] == nil { owners[topic] = app.name }
        }
        self.apps = byName
        self.defaultApp = defaultApp ?? (apps.count == 1 ? apps.first?.name : nil)
        self.topicOwners = owners
    }

    /// The app a push to `provider` goes with: the one named `app`, else the owner of `topic` (APNs), else the
    /// default app; or why none serves it (no such app, or the app has no configuration for the provider).
    public func resolve(app: String?, provider: PushProvider, topic: String?) -> Result<AppConfiguration, Unserved> {
        let name: String
        if let app {
            name = app
        } else if provider == .apns, let topic, let owner = topicOwners[topic] {
            name = owner
        } else if let defaultApp {
            name = defaultApp
        } else {
            return .failure(Unserved(message: "the device names no app, and no app owns its topic or is the default"))
        }
        guard let found = apps[name] else { return .failure(Unserved(message: "no app \(name) is configured")) }
        switch provider {
        case .apns where found.apns == nil: return .failure(Unserved(message: "app \(name) has no APNs configuration"))
        case .fcm where found.fcm == nil: return .failure(Unserved(message: "app \(name) has no FCM configuration"))
        default: return .success(found)
        }
    }
}

extension ErrorCode<AppRegistry.Unserved> {
    /// The deployment does not deliver to the push's provider, or no app of it serves the push.
    public static var providerNotConfigured: Self { Self("provider_not_configured") }
}
