import BadgeCore
import BadgeSupport
import BadgeWire
import Foundation
import ProviderAuth
import Yams

/// The apps of a deployment, read from `--apps-file`: YAML, checked whole at start, every error naming its line.
///
/// ```yaml
/// default_app: amen            # optional with one app
/// apps:
///   amen:
///     apns:
///       key_file: AuthKey_ABC123DEFG.p8      # or cert_file + cert_key_file; neither: no credentials
///       key_id: ABC123DEFG
///       team_id: DEF123GHIJ
///       topics: [com.example.amen]           # the first is the topic of devices registered without one
///       environment: production              # or sandbox: devices registered without an environment
///     fcm:
///       credentials_file: amen-firebase.json # a service-account JSON file
///       project: amen-prod                   # default: the file's project_id
///   psalms:
///     apns: {key_file: AuthKey_XYZ.p8, key_id: XYZ987WVUT, team_id: QRS456TUVW, topics: [org.psalms.app]}
/// ```
///
/// Relative file names are read from the apps file's directory. Unknown keys are errors (a misspelt `topic`
/// would otherwise be silently ignored).
public enum AppsFile {
    /// An error in the file, with the line it is about (1-based; 0 when it is about the whole file).
    public struct Problem: Error, Sendable, CustomStringConvertible, Equatable {
        /// A typed, machine-readable error code.
        public typealias Code = ErrorCode<AppsFile.Problem>

        /// The error's code.
        public var code: Code
        /// The file's name as given.
        public var file: String
        /// The line, 1-based; 0 for the file as a whole.
        public var line: Int
        /// What is wrong.
        public var message: String

        /// Creates an error.
        public init(code: Code = .invalidAppsFile, file: String, line: Int, message: String) {
            self.code = code
            self.file = file
            self.line = line
            self.message = message
        }

        /// The file, the line and the message: `apps.yaml line 4: …` (the code is not shown, users read this).
        public var description: String {
            line > 0 ? "\(file) line \(line): \(message)" : "\(file): \(message)"
        }
    }

    /// The apps of the file at `path`; throws a ``Problem`` naming the line of the first error.
    public static func load(path: String) throws -> (apps: [AppConfiguration], defaultApp: String?) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Problem(code: .unreadableFile, file: path, line: 0, message: "cannot read the file")
        }
        let directory = (path as NSString).deletingLastPathComponent
        return try parse(String(decoding: data, as: UTF8.self), file: path, directory: directory)
    }

    /// The apps of YAML `text` (from `file`, for messages; relative paths are read from `directory`).
    public static func parse(
        _ text: String, file: String, directory: String
    ) throws -> (apps: [AppConfiguration], defaultApp: String?) {
        let reader = Reader(file: file, directory: directory)
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw reader.syntax(error)
        }
        guard let root else { throw Problem(file: file, line: 0, message: "is empty: it must declare apps") }
        let top = try reader.mapping(root, "the file", keys: ["apps", "default_app"])
        guard let appsNode = top["apps"] else {
            throw reader.problem(root, "has no apps: give apps with at least one app")
        }
        let appNodes = try reader.pairs(appsNode, "apps")
        guard !appNodes.isEmpty else { throw reader.problem(appsNode, "apps has no app") }
        var apps: [AppConfiguration] = []
        var owners: [String: String] = [:]
        for (key, value) in appNodes {
            let name = try reader.string(key, "an app's name")
            guard AppConfiguration.isValidName(name) else {
                throw reader.problem(key, "the app name \"\(name)\" must be 1-64 of [A-Za-z0-9._-]")
            }
            guard !apps.contains(where: { $0.name == name }) else {
                throw reader.problem(key, "the app \(name) is declared twice")
            }
            let app = try reader.app(name, value)
            for topic in app.apns?.topics ?? [] {
                if let owner = owners[topic] {
                    throw reader.problem(value, "the topic \(topic) of app \(name) is already app \(owner)'s")
                }
                owners[topic] = name
            }
            apps.append(app)
        }
        var defaultApp: String?
        if let node = top["default_app"] {
            let name = try reader.string(node, "default_app")
            guard apps.contains(where: { $0.name == name }) else {
                throw reader.problem(node, "default_app names \(name), which is not an app of the file")
            }
            defaultApp = name
        }
        return (apps, defaultApp)
    }

    /// Reads nodes, each error with its node's line.
    private struct Reader {
        let file: String
        let directory: String

        func problem(_ node: Node, _ message: String) -> Problem {
            Problem(file: file, line: node.mark?.line ?? 0, message: message)
        }

        func syntax(_ error: YamlError) -> Problem {
            switch error {
            case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _),
                .composer(_, let problem, let mark, _):
                return Problem(file: file, line: mark.line, message: "is not valid YAML: \(problem)")
            case .duplicatedKeysInMapping(let duplicates, let context):
                return Problem(
                    file: file, line: context.mark.line,
                    message: "repeats the key \(duplicates.joined(separator: ", ")) in one mapping")
            default:
                return Problem(file: file, line: 0, message: "is not valid YAML: \(error)")
            }
        }

        /// The pairs of a mapping, in order.
        func pairs(_ node: Node, _ what: String) throws -> [(Node, Node)] {
            guard let mapping = node.mapping else { throw problem(node, "\(what) must be a mapping") }
            return mapping.map { ($0.key, $0.value) }
        }

        /// A mapping's values by key, refusing keys other than `keys`.
        func mapping(_ node: Node, _ what: String, keys: Set<String>) throws -> [String: Node] {
            var values: [String: Node] = [:]
            for (key, value) in try pairs(node, what) {
                let name = try string(key, "a key of \(what)")
                guard keys.contains(name) else {
                    throw problem(
                        key, "\(what) has an unknown key \(name) (known: \(keys.sorted().joined(separator: ", ")))")
                }
                values[name] = value
            }
            return values
        }

        func string(_ node: Node, _ what: String) throws -> String {
            guard case .scalar(let scalar) = node, !scalar.string.isEmpty else {
                throw problem(node, "\(what) must be a non-empty string")
            }
            return scalar.string
        }

        /// A file name, read from the apps file's directory when relative.
        func path(_ node: Node, _ what: String) throws -> String {
            let name = try string(node, what)
            let path = name.hasPrefix("/") ? name : (directory as NSString).appendingPathComponent(name)
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw problem(node, "\(what) \(name) is not a readable file")
            }
            return path
        }

        func app(_ name: String, _ node: Node) throws -> AppConfiguration {
            let values = try mapping(node, "app \(name)", keys: ["apns", "fcm"])
            guard values["apns"] != nil || values["fcm"] != nil else {
                throw problem(node, "app \(name) has neither apns nor fcm")
            }
            return AppConfiguration(
                name: name, apns: try values["apns"].map { try apns(name, $0) },
                fcm: try values["fcm"].map { try fcm(name, $0) })
        }

        func apns(_ app: String, _ node: Node) throws -> AppConfiguration.APNs {
            let what = "app \(app) apns"
            let values = try mapping(
                node, what,
                keys: ["key_file", "key_id", "team_id", "cert_file", "cert_key_file", "topics", "environment"])
            var credentials: DeliveryConfiguration.APNsCredentials?
            if values["key_file"] != nil || values["key_id"] != nil || values["team_id"] != nil {
                guard values["cert_file"] == nil, values["cert_key_file"] == nil else {
                    throw problem(node, "\(what) has both a key (key_file) and a certificate (cert_file): give one")
                }
                guard let fileNode = values["key_file"] else { throw problem(node, "\(what) needs key_file") }
                guard let keyNode = values["key_id"] else { throw problem(node, "\(what) needs key_id") }
                guard let teamNode = values["team_id"] else { throw problem(node, "\(what) needs team_id") }
                let file = try path(fileNode, "key_file")
                do {
                    credentials = .token(
                        try APNsSigningKey(
                            file: file, keyID: try string(keyNode, "key_id"), teamID: try string(teamNode, "team_id")))
                } catch let error as Problem {
                    throw error
                } catch {
                    throw problem(fileNode, "key_file: \(error)")
                }
            } else if values["cert_file"] != nil || values["cert_key_file"] != nil {
                guard let chain = values["cert_file"] else { throw problem(node, "\(what) needs cert_file") }
                guard let key = values["cert_key_file"] else { throw problem(node, "\(what) needs cert_key_file") }
                credentials = .certificate(
                    chainFile: try path(chain, "cert_file"), keyFile: try path(key, "cert_key_file"))
            }
            var topics: [String] = []
            if let node = values["topics"] {
                guard case .sequence(let sequence) = node, !sequence.isEmpty else {
                    throw problem(node, "\(what) topics must be a list of bundle ids")
                }
                for topic in sequence {
                    let value = try string(topic, "a topic")
                    guard value.utf8.count <= 255, value.utf8.allSatisfy(EventDecoder.isTopicByte) else {
                        throw problem(topic, "the topic \(value) must be 1-255 chars of [A-Za-z0-9.-] (a bundle id)")
                    }
                    topics.append(value)
                }
            }
            if credentials != nil, topics.isEmpty {
                throw problem(
                    node,
                    "\(what) needs topics, the app's bundle ids: Apple deactivates a device pushed with another app's")
            }
            var environment = APNsEnvironment.production
            if let node = values["environment"] {
                guard let value = APNsEnvironment(rawValue: try string(node, "environment")) else {
                    throw problem(node, "\(what) environment must be production or sandbox")
                }
                environment = value
            }
            return AppConfiguration.APNs(credentials: credentials, topics: topics, environment: environment)
        }

        func fcm(_ app: String, _ node: Node) throws -> AppConfiguration.FCM {
            let what = "app \(app) fcm"
            let values = try mapping(node, what, keys: ["credentials_file", "project"])
            var account: ServiceAccount?
            if let fileNode = values["credentials_file"] {
                let file = try path(fileNode, "credentials_file")
                do {
                    account = try ServiceAccount(file: file)
                } catch {
                    throw problem(fileNode, "credentials_file: \(error)")
                }
            }
            let project = try values["project"].map { try string($0, "project") } ?? account?.projectID
            guard account != nil || project != nil else {
                throw problem(node, "\(what) needs credentials_file (a service-account JSON file) or a project")
            }
            return AppConfiguration.FCM(credentials: account, project: project)
        }
    }
}

extension ErrorCode<AppsFile.Problem> {
    /// The file cannot be read.
    public static var unreadableFile: Self { Self("unreadable_file") }
    /// The file is not valid YAML, or not a valid apps file.
    public static var invalidAppsFile: Self { Self("invalid_apps_file") }
}
