extension Optional where Wrapped == Watchdog {
    /// Runs `body` watched under `name` when there is a watchdog, unwatched otherwise.
    func watch<T>(_ name: String, _ body: () async throws -> T) async rethrows -> T {
        guard let watchdog = self else { return try await body() }
        return try await watchdog.watch(name, body)
    }
}
