extension PushPayloadBuilder {
    /// The ellipsis appended to shortened text.
    static let ellipsis = "…"

    /// Renders `text` and, if the result exceeds `limit` bytes, shortens the body (then, if needed, the
    /// title) to the longest prefix of whole Characters (extended grapheme clusters) that fits with "…"
    /// appended. Returns the rendering of the best fit; it exceeds `limit` only when even a title and body
    /// of "…" do not fit.
    static func fit(_ text: AlertText, limit: Int, render: (AlertText) -> [UInt8]) -> [UInt8] {
        let full = render(text)
        if full.count <= limit { return full }

        let bodyCharacters = Array(text.body)
        if let bytes = longestFitting(
            bodyCharacters, limit: limit, render: { render(AlertText(title: text.title, body: $0)) })
        {
            return bytes
        }
        let shortBody = text.body.isEmpty ? "" : ellipsis
        let titleCharacters = Array(text.title)
        if let bytes = longestFitting(
            titleCharacters, limit: limit, render: { render(AlertText(title: $0, body: shortBody)) })
        {
            return bytes
        }
        return render(AlertText(title: text.title.isEmpty ? "" : ellipsis, body: shortBody))
    }

    /// Binary search for the largest `k < characters.count` such that `render(prefix(k) + "…")` fits.
    /// The rendered size grows with `k`, so the search is exact. `nil` when not even "…" alone fits.
    private static func longestFitting(
        _ characters: [Character], limit: Int, render: (String) -> [UInt8]
    ) -> [UInt8]? {
        func attempt(_ k: Int) -> [UInt8] {
            render(String(characters[0..<k]) + ellipsis)
        }
        guard !characters.isEmpty else { return nil }
        var best = attempt(0)
        guard best.count <= limit else { return nil }
        var low = 0
        var high = characters.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            let candidate = attempt(mid)
            if candidate.count <= limit {
                low = mid
                best = candidate
            } else {
                high = mid - 1
            }
        }
        return best
    }
}
