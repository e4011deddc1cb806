extension PushPayloadBuilder {
    /// The ellipsis appended to shortened text.
    static let ellipsis = "…"

    /// Renders `text` and, if the result exceeds `limit` bytes, shortens the body (then, if needed, the
    /// title) to the longest prefix of whole Characters (extended grapheme clusters) that fits with "…"
    /// appended. Returns the rendering of the best fit; it exceeds `limit` only when even a title and body
    /// of "…" do not fit.
    ///
    /// `render` must write the title and the body whole, each in at least as many bytes as its UTF-8 (the
    /// payloads do: JSON strings, escaped). Then a text longer than `limit` in UTF-8 cannot fit, and one more
    /// Character makes the rendering at least a byte longer: the search looks at no more than `limit` Characters
    /// of a text however long, and never renders a prefix longer than that.
    ///
    /// With `cuts`, a body shortened before under the same `key` (the same text and layout: see ``AlertCuts``)
    /// with as many bytes left for it is cut where it was, and rendered once; `render` must then also write the
    /// body in a number of bytes that does not depend on the other fields.
    static func fit(
        _ text: AlertText, limit: Int, cuts: AlertCuts? = nil, key: String = "", render: (AlertText) -> [UInt8]
    ) -> [UInt8] {
        if text.title.utf8.count + text.body.utf8.count <= limit {
            let full = render(text)
            if full.count <= limit { return full }
        }

        if let bytes = longestFitting(
            text.body, limit: limit, cuts: cuts, key: key, render: { render(AlertText(title: text.title, body: $0)) })
        {
            return bytes
        }
        let shortBody = text.body.isEmpty ? "" : ellipsis
        if let bytes = longestFitting(
            text.title, limit: limit, cuts: nil, key: key, render: { render(AlertText(title: $0, body: shortBody)) })
        {
            return bytes
        }
        return render(AlertText(title: text.title.isEmpty ? "" : ellipsis, body: shortBody))
    }

    /// The largest `k` below the number of Characters of `text` such that `render(prefix(k) + "…")` fits, and that
    /// rendering; `nil` when not even "…" alone fits. The rendered size grows by at least a byte with each Character
    /// (see ``fit(_:limit:cuts:key:render:)``), so `k` is at most `limit` minus the size for `k = 0`, and the search
    /// is exact.
    ///
    /// It guesses where the limit falls from the bytes per Character seen so far (a text of one kind of Character
    /// is found in two or three renderings), and bisects instead whenever a guess did not halve what is left, so it
    /// never takes more than about twice the renderings of a plain bisection.
    private static func longestFitting(
        _ text: String, limit: Int, cuts: AlertCuts?, key: String, render: (String) -> [UInt8]
    ) -> [UInt8]? {
        guard !text.isEmpty else { return nil }
        var best = render(ellipsis)
        guard best.count <= limit else { return nil }
        let cutKey = AlertCuts.Key(layout: key, budget: limit - best.count)
        if let cut = cuts?.cut(text, cutKey) {
            let known = render(String(text.prefix(cut)) + ellipsis)
            if known.count <= limit { return known }
        }
        // Only the Characters that could fit, and one more to know whether the text has more than those.
        let characters = Array(text.prefix(limit - best.count + 1))
        // `low` fits (rendered as `best`); the answer is at most `high`: below the whole text (which did not fit
        // whole), and within what the bytes left allow.
        var low = 0
        var high = min(characters.count - 1, limit - best.count)
        // Bytes per Character between `low` and the last rendering, at least 1.
        var rate = 1
        var bisect = false
        while low < high {
            let guess: Int
            if bisect {
                guess = (low + high + 1) / 2
            } else {
                guess = min(high, max(low + 1, low + (limit - best.count) / rate))
            }
            let candidate = render(String(characters[0..<guess]) + ellipsis)
            let span = high - low
            rate = max(1, (candidate.count - best.count + (guess - low) - 1) / (guess - low))
            if candidate.count <= limit {
                low = guess
                best = candidate
            } else {
                high = guess - 1
            }
            bisect = !bisect && (high - low) * 2 > span
        }
        cuts?.remember(low, of: text, for: cutKey)
        return best
    }
}
