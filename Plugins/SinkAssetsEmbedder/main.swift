import Foundation

// Writes a Swift file that declares each given file's text as a static string of `SinkAssets`, named after the
// file (`app.js` → `appJs`, `openapi.json` → `openapiJson`). Run by the EmbedSinkAssets build plugin:
// `SinkAssetsEmbedder OUTPUT FILE...`.

/// The raw string delimiter around each file's text; a file holding it cannot be embedded.
let delimiter = "####"

/// `app.js` → `appJs`, `my-view_2.css` → `myView2Css`.
func swiftName(_ fileName: String) -> String {
    let parts = fileName.split(whereSeparator: { $0 == "." || $0 == "-" || $0 == "_" }).map(String.init)
    return (parts.first ?? "") + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("SinkAssetsEmbedder: \(message)\n".utf8))
    exit(1)
}

let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else { fail("usage: SinkAssetsEmbedder OUTPUT FILE...") }
var swift = "// Generated at build time by the EmbedSinkAssets plugin from Sources/BadgeSink/Assets.\n\n"
swift += "extension SinkAssets {\n"
for (index, path) in arguments.dropFirst().enumerated() {
    let name = URL(fileURLWithPath: path).lastPathComponent
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { fail("\(name) is not UTF-8 text") }
    if text.contains("\"\"\"\(delimiter)") || text.contains("\\\(delimiter)") {
        fail("\(name) holds the raw string delimiter \(delimiter)")
    }
    if text.contains("\r") { fail("\(name) has carriage returns") }
    let indented = text.split(separator: "\n", omittingEmptySubsequences: false)
        .map { $0.isEmpty ? "" : "        " + $0 }.joined(separator: "\n")
    if index > 0 { swift += "\n" }
    swift += "    /// `Assets/\(name)`.\n"
    swift += "    static let \(swiftName(name)) = \(delimiter)\"\"\"\n\(indented)\n        \"\"\"\(delimiter)\n"
}
swift += "}\n"
// The same text is not written again: the build would compile the sink again for a new file time (the tool runs
// on every build, as SwiftPM links it anew).
if (try? String(contentsOfFile: output, encoding: .utf8)) == swift { exit(0) }
do {
    try swift.write(toFile: output, atomically: true, encoding: .utf8)
} catch {
    fail("cannot write \(output): \(error)")
}
