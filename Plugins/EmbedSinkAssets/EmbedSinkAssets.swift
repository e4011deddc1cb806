import Foundation
import PackagePlugin

/// Embeds the sink's static files (`Sources/BadgeSink/Assets`: the OpenAPI document and the web view) in Swift at
/// build time, so that the `badgepipe` binary serves them with no resource bundle beside it and the repository
/// holds them once, as the files themselves.
@main
struct EmbedSinkAssets: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let assets = context.package.directoryURL.appending(path: "Sources/\(target.name)/Assets")
        let files = try FileManager.default.contentsOfDirectory(at: assets, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "SinkAssets+Embedded.swift")
        return [
            .buildCommand(
                displayName: "Embedding the sink's assets",
                executable: try context.tool(named: "SinkAssetsEmbedder").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output])
        ]
    }
}
