import Synchronization

/// Where the alert texts of recent events were cut to fit a push's body, shared by the pushes being built (see
/// ``PushPayloadBuilder/fit(_:limit:cuts:key:render:)``).
///
/// An alert goes to each of a user's devices with the same text and a body that differs only in the badge, the
/// counts, the version and (FCM) the token. How many Characters of the text fit depends only on the text, the
/// provider's layout and the bytes those other fields leave to it: one cut serves every push of the event with
/// that many bytes left, and the others render once instead of searching.
///
/// At most ``capacity`` cuts are kept; when full, all are forgotten (a cut is only ever a saving).
public final class AlertCuts: Sendable {
    /// The most cuts kept.
    public static let capacity = 4096

    struct Key: Hashable {
        /// The event, the provider and the preference that make the text and its layout.
        var layout: String
        /// Bytes left to the text: the limit minus the rendering with "…" for a body.
        var budget: Int
    }

    private let cuts = Mutex<[Key: (text: String, cut: Int)]>([:])

    /// An empty set of cuts.
    public init() {}

    /// Where `text` was cut under `key`; nil when it was not, or another text was (the same key for another text
    /// is a mistake of the caller, and costs only the search).
    func cut(_ text: String, _ key: Key) -> Int? {
        cuts.withLock { cuts in
            guard let known = cuts[key], known.text == text else { return nil }
            return known.cut
        }
    }

    func remember(_ cut: Int, of text: String, for key: Key) {
        cuts.withLock { cuts in
            if cuts.count >= Self.capacity { cuts.removeAll(keepingCapacity: true) }
            cuts[key] = (text, cut)
        }
    }

    /// How many cuts are kept.
    var count: Int { cuts.withLock { $0.count } }
}
