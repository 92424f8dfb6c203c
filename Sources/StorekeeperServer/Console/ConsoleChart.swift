/// A bar chart drawn on the server as SVG (no script, no external file): one bar per period.
/// Text is escaped here, as every value in a template is.
struct ConsoleChart {
    var title: String
    var bars: [(label: String, value: Int64, text: String)]

    func svg() -> String {
        let width = 600
        let height = 200
        let top = 16
        let bottom = 28
        let largest = max(bars.map(\.value).max() ?? 0, 1)
        let slot = bars.isEmpty ? width : width / bars.count
        var out = """
            <svg class="chart" role="img" viewBox="0 0 \(width) \(height)" xmlns="http://www.w3.org/2000/svg" aria-label="\(Self.escape(title))">
            <title>\(Self.escape(title))</title>
            """
        for (index, bar) in bars.enumerated() {
            let value = max(bar.value, 0)
            // Pixels, not money: a bar's height is its share of the tallest.
            let barHeight = Int((Double(value) / Double(largest)) * Double(height - top - bottom))
            let x = index * slot + slot / 8
            let y = height - bottom - barHeight
            out +=
                "<rect x=\"\(x)\" y=\"\(y)\" width=\"\(max(slot * 3 / 4, 1))\" height=\"\(barHeight)\"><title>\(Self.escape(bar.label)): \(Self.escape(bar.text))</title></rect>"
            if bars.count <= 16 {
                out += "<text x=\"\(x)\" y=\"\(max(y - 2, 10))\">\(Self.escape(bar.text))</text>"
                out += "<text x=\"\(x)\" y=\"\(height - 10)\">\(Self.escape(bar.label))</text>"
            }
        }
        return out + "</svg>"
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
