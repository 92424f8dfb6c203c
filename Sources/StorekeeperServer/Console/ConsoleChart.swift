/// A bar chart drawn on the server as SVG (no script, no external file): one bar per period.
/// The geometry is decided here; the markup is the `chart` template's, which escapes every text.
struct ConsoleChart {
    var title: String
    var bars: [(label: String, value: Int64, text: String)]

    static let width = 600
    static let height = 200
    static let top = 18
    static let bottom = 28

    /// The `chart` partial's context.
    func context() -> [String: Any] {
        let (width, height, top, bottom) = (Self.width, Self.height, Self.top, Self.bottom)
        let largest = max(bars.map(\.value).max() ?? 0, 1)
        let slot = bars.isEmpty ? width : width / bars.count
        let barWidth = max(slot * 3 / 4, 1)
        let shapes: [[String: Any]] = bars.enumerated().map { index, bar in
            // Pixels, not money: a bar's height is its share of the tallest.
            let barHeight = Int((Double(max(bar.value, 0)) / Double(largest)) * Double(height - top - bottom))
            let x = index * slot + slot / 8
            let y = height - bottom - barHeight
            return [
                "x": x, "y": y, "barWidth": barWidth, "barHeight": barHeight, "middle": x + barWidth / 2, "label": bar.label,
                "text": bar.text, "labelled": bars.count <= 16, "textY": max(y - 4, 12), "labelY": height - 10,
            ]
        }
        return ["title": title, "width": width, "height": height, "baseline": height - bottom, "bars": shapes]
    }
}
