import ArgumentParser
import BadgePipeTesting

/// Where a running sink is, for `badgepipe sink wait` and `badgepipe sink devices`, which ask it through
/// `BadgePipeTesting`'s ``SinkClient`` (the library users' Swift tests use).
struct SinkClientOptions: ParsableArguments {
    @Option(help: "The sink's URL (BADGEPIPE_SINK_URL, default http://127.0.0.1:8787).") var url: String?

    /// The client of the sink at ``url`` (else `BADGEPIPE_SINK_URL`, else `http://127.0.0.1:8787`).
    var client: SinkClient { SinkClient(url: url) }
}

/// A duration on the command line: `10s`, `500ms`, `2m`, or a number of seconds.
struct CommandDuration: ExpressibleByArgument {
    /// The length in seconds.
    let seconds: Double

    init?(argument: String) {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60)]
        var text = Substring(argument)
        var scale = 1.0
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            text = text.dropLast(suffix.count)
            scale = factor
            break
        }
        guard let value = Double(text), value >= 0, value.isFinite else { return nil }
        self.seconds = value * scale
    }

    /// The length as a `Duration`.
    var duration: Duration { .milliseconds(Int64((seconds * 1000).rounded())) }
}

extension SinkClientError {
    /// The error as the command line reports it.
    var commandError: CommandError {
        CommandError(
            code: code == .unreachable ? .sinkUnreachable : .sinkError, message: "the sink: \(message)")
    }
}
