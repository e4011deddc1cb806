import BadgeCore
import BadgeWire
import Metrics

/// The sender's metrics (see the worker's `WorkerMetrics` for the rest). Label values are bounded.
enum DeliveryMetrics {
    /// Requests that got an answer or failed without one, by provider and status class (`2xx`, `4xx`, `5xx`,
    /// `other`; `none`: no answer, a network error or timeout).
    static func attempts(_ provider: PushProvider, status: Int?) -> Counter {
        let index = statusClasses.firstIndex(of: statusClass(status)) ?? 0
        return provider == .apns ? apnsAttempts[index] : fcmAttempts[index]
    }

    private static let statusClasses = ["2xx", "4xx", "5xx", "other", "none"]
    private static let apnsAttempts = statusClasses.map { counter(.apns, $0) }
    private static let fcmAttempts = statusClasses.map { counter(.fcm, $0) }

    private static func counter(_ provider: PushProvider, _ statusClass: String) -> Counter {
        Counter(
            label: "badgepipe_push_attempts_total",
            dimensions: [("provider", provider.rawValue), ("status_class", statusClass)])
    }

    static func statusClass(_ status: Int?) -> String {
        switch status {
        case nil: "none"
        case .some(200..<300): "2xx"
        case .some(400..<500): "4xx"
        case .some(500..<600): "5xx"
        default: "other"
        }
    }
}
