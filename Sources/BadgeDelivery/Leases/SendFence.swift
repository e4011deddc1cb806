/// Decides, attempt by attempt, whether a push may still go out: a fleet worker's proof that it still owns the
/// partition the push belongs to.
///
/// ``PushSender`` calls ``prepare()`` before each attempt and ``check()`` at the last moment, when a connection
/// has taken the request head and is ready for the body. A veto from `check()` aborts that attempt before the
/// body is written, so the provider never receives a complete request; the next attempt starts with `prepare()`.
public protocol SendFence: Sendable {
    /// Before each attempt; may wait (renew a lease in a database). Throwing ends the push, unsent.
    func prepare() async throws

    /// The last-moment check, right before the body is written. Must be quick and do no I/O; throwing vetoes the
    /// attempt.
    func check() throws
}
