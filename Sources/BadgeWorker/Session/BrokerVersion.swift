/// A RabbitMQ version, and what BadgePipe's topology needs from it.
///
/// The partition exchange (`x-modulus-hash`) comes from the `rabbitmq_sharding` plugin up to 3.13 and is built into
/// the broker from 4.3, reworked there for stable routing. On 4.0–4.2 with the Khepri metadata store its routing was
/// not stable, which would move users between partitions and break their order, so those versions are refused
/// unless the operator says otherwise. From 4.0 a quorum queue without `x-delivery-limit` has a default limit of
/// 20 deliveries, so the dead queue is given an explicit unlimited one there.
public struct BrokerVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public var patch: Int

    /// Creates a version.
    public init(_ major: Int, _ minor: Int, _ patch: Int = 0) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    /// Reads the broker's `version` server property (`"3.10.8"`, `"4.1.0-rc.1"`, `"3.13.7+12.g1234"`); nil when
    /// it does not start with `major.minor`.
    public init?(_ text: String) {
        let numbers = text.split(whereSeparator: { $0 == "-" || $0 == "+" }).first.map {
            $0.split(separator: ".").map { Int($0) }
        }
        guard let numbers, numbers.count >= 2, let major = numbers[0], let minor = numbers[1] else { return nil }
        let patch = numbers.count > 2 ? numbers[2] ?? 0 : 0
        self.init(major, minor, patch)
    }

    public var description: String { "\(major).\(minor).\(patch)" }

    public static func < (lhs: BrokerVersion, rhs: BrokerVersion) -> Bool {
        (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
    }

    /// What BadgePipe makes of a broker version.
    public enum Support: Sendable, Hashable {
        /// Tested and supported: 3.10–3.13 with the sharding plugin, 4.3 and later with the built-in exchange.
        case supported
        /// Runs, with a warning: quorum queues and single active consumer exist, but the version is untested
        /// (3.8, 3.9).
        case untested(String)
        /// Refused unless overridden: 4.0–4.2, whose modulus-hash routing was not stable under Khepri.
        case unstableRouting(String)
        /// Refused: older than 3.8, without quorum queues.
        case unsupported(String)
    }

    /// What BadgePipe makes of this version.
    public var support: Support {
        if self < BrokerVersion(3, 8) {
            return .unsupported(
                "RabbitMQ \(self) has no quorum queues or single active consumer; BadgePipe needs 3.10 or later")
        }
        if self < BrokerVersion(3, 10) {
            return .untested("RabbitMQ \(self) is untested; BadgePipe is tested on 3.10 to 3.13 and 4.3 or later")
        }
        if self >= BrokerVersion(4, 0), self < BrokerVersion(4, 3) {
            return .unstableRouting(
                "RabbitMQ \(self): on 4.0 to 4.2 the x-modulus-hash exchange's routing was not stable with the Khepri "
                    + "metadata store (reworked in 4.3), which would move users between partitions and break their "
                    + "order; use 3.13 or 4.3 or later, or pass --allow-unstable-routing "
                    + "(BADGEPIPE_ALLOW_UNSTABLE_ROUTING=1) on a broker known to run Mnesia")
        }
        return .supported
    }

    /// True when quorum queues have a default delivery limit (4.0 and later), so the dead queue needs an explicit
    /// unlimited one.
    public var defaultsDeliveryLimit: Bool { self >= BrokerVersion(4, 0) }

    /// True when the modulus-hash exchange is built in (4.3 and later) rather than from the sharding plugin.
    public var hasBuiltInModulusHash: Bool { self >= BrokerVersion(4, 3) }
}
