import ArgumentParser

/// The `badgepipe` command line.
@main
struct BadgePipe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "badgepipe",
        abstract: "Server-side notification badges: consume events, keep counts, push authoritative badges.",
        subcommands: [
            WorkerCommand.self, SinkCommand.self, PublishCommand.self, SetupCommand.self, HealthCommand.self,
            DeadCommand.self, APICommand.self,
        ]
    )
}
