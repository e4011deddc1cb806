import BadgeCore
import BadgeWire
import Synchronization

/// Whether a provider currently refuses our credentials or configuration: set by a configuration-error answer,
/// cleared by the next push that provider accepts. A worker with one is not ready (`/readyz`): its pushes are kept,
/// but nothing reaches that provider until an operator fixes the setting.
public final class ProviderHealth: Sendable {
    /// A provider's last configuration error.
    public struct Problem: Sendable, Equatable {
        public var provider: PushProvider
        public var reason: String
    }

    private let problems = Mutex<[PushProvider: String]>([:])

    public init() {}

    /// The providers refusing our configuration now, with their last reason.
    public var current: [Problem] {
        problems.withLock { problems in
            problems.sorted { $0.key.rawValue < $1.key.rawValue }.map { Problem(provider: $0.key, reason: $0.value) }
        }
    }

    func configurationError(_ provider: PushProvider, reason: String) {
        problems.withLock { $0[provider] = reason }
    }

    func accepted(_ provider: PushProvider) {
        problems.withLock { problems in
            if problems[provider] != nil { problems[provider] = nil }
        }
    }
}
