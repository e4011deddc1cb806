/// What retention deletes once it is older than the configured age (`badgepipe worker --retention-days`), in small
/// batches. Unread notifications and messages, counts, watermarks, devices and the outbox are never touched.
public enum RetentionKind: String, Sendable, CaseIterable {
    /// Processed event ids, by when they were recorded: a duplicate of an event older than the retention is taken
    /// for a new event.
    case processedEvents = "processed_events"
    /// Read tombstones (a `notification_read` for an id that had not arrived), by when they were made: the
    /// notification arriving after that is unread (unless a read-all watermark covers it).
    case readTombstones = "read_tombstones"
    /// Read notifications, by their `occurred_at`.
    case readNotifications = "read_notifications"
    /// Read messages, by their `occurred_at`.
    case readMessages = "read_messages"
}
