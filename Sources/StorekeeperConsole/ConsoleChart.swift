/// A bar chart drawn on the server as SVG (no script, no external file): one bar per period.
/// The geometry is decided here; the markup is the `chart` partial's, which escapes every text.
public struct ConsoleChart: Sendable, Hashable {
    public struct Bar: Sendable, Hashable {
        public var x: Int
        public var y: Int
        public var barWidth: Int
        public var barHeight: Int
        public var middle: Int
        public var label: String
        public var text: String
        /// Labels are written only while a dozen or so fit side by side.
        public var labelled: Bool
        public var textY: Int
        public var labelY: Int
    }

    public var title: String
    public var width = 600
    public var height = 200
    public var baseline: Int
    public var bars: [Bar]

    static let top = 18
    static let bottom = 28

    /// `values`: one per period, in order; a bar's height is its share of the tallest (pixels,
    /// not money), a negative value drawn as none.
    public init(title: String, values: [(label: String, value: Int64, text: String)]) {
        self.title = title
        let (width, height, top, bottom) = (600, 200, Self.top, Self.bottom)
        let largest = max(values.map(\.value).max() ?? 0, 1)
        let slot = values.isEmpty ? width : width / values.count
        let barWidth = max(slot * 3 / 4, 1)
        baseline = height - bottom
        bars = values.enumerated().map { index, bar in
            let barHeight = Int((Double(max(bar.value, 0)) / Double(largest)) * Double(height - top - bottom))
            let x = index * slot + slot / 8
            let y = height - bottom - barHeight
            return Bar(
                x: x, y: y, barWidth: barWidth, barHeight: barHeight, middle: x + barWidth / 2, label: bar.label, text: bar.text,
                labelled: values.count <= 16, textY: max(y - 4, 12), labelY: height - 10)
        }
    }
}
