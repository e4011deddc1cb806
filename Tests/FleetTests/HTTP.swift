import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends one request through `URLSession` (the fleet tests' way to reach a worker's operations listener, a
/// `badgepipe sink` process or the broker's management API) and returns the answer's status and body.
func http(
    _ url: String, method: String = "GET", body: String? = nil, headers: [String: String] = [:]
) async throws -> (status: Int, text: String) {
    guard let location = URL(string: url) else { throw FleetError("not a URL: \(url)") }
    var request = URLRequest(url: location)
    request.httpMethod = method
    if let body { request.httpBody = Data(body.utf8) }
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
}

/// The status of `GET url`, or 0 when nothing answers.
func httpStatus(_ url: String) async -> Int {
    (try? await http(url))?.status ?? 0
}

/// `text` parsed as a JSON object; empty when it is not one.
func jsonObject(_ text: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
}
