public import StorekeeperWire

/// The Retention Messaging API's configuration calls: the messages and images Apple shows, the
/// default message per product and locale, the realtime URL, and the performance test Apple
/// runs against that URL before it may be used in production. Shapes as Apple documents them;
/// every answer's field optional and every state a `RawStringValue`, so a new value is kept.
public enum RetentionConfiguration {
    /// Apple's lengths, in characters, checked before a call so a mistake names its field.
    public static let maximumHeaderLength = 66
    public static let maximumBodyLength = 144
    public static let maximumAltTextLength = 150
    public static let maximumBulletPoints = 5
    public static let maximumBulletPointTextLength = 66
    public static let maximumRealtimeURLLength = 256
    /// Apple keeps at most this many of each per app.
    public static let maximumImages = 2000
    public static let maximumMessages = 2000

    /// Apple's error codes for these calls (`apiErrorCode`).
    public enum ErrorCode {
        public static let invalidImage = 4_000_161
        public static let headerTooLong = 4_000_162
        public static let bodyTooLong = 4_000_163
        public static let invalidLocale = 4_000_164
        public static let altTextTooLong = 4_000_175
        public static let invalidPerformanceTestRequest = 4_000_211
        public static let invalidRequestId = 4_000_212
        public static let existingPerformanceTestRun = 4_000_213
        public static let badRealtimeURL = 4_000_215
        public static let badImageSize = 4_000_216
        public static let tooManyBulletPoints = 4_000_218
        public static let bulletPointTextTooLong = 4_000_219
        public static let aboveImageRequiresAnImage = 4_000_224
        public static let maximumImagesReached = 4_030_014
        public static let maximumMessagesReached = 4_030_016
        public static let messageNotApproved = 4_030_017
        public static let imageNotApproved = 4_030_018
        public static let imageInUse = 4_030_019
        public static let noPassingPerformanceTest = 4_030_026
        public static let imageNotFound = 4_040_014
        public static let messageNotFound = 4_040_015
        public static let performanceTestNotFound = 4_040_018
        public static let defaultMessageNotFound = 4_040_020
        public static let realtimeURLNotFound = 4_040_021
        public static let imageAlreadyExists = 4_090_000
        public static let messageAlreadyExists = 4_090_001
    }
}

/// Where a message's header sits: above the body, or above the message's image.
public struct RetentionHeaderPosition: RawStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let aboveBody = Self(rawValue: "ABOVE_BODY")
    public static let aboveImage = Self(rawValue: "ABOVE_IMAGE")
    public static let known: Set<Self> = [.aboveBody, .aboveImage]
}

/// `FULL_SIZE` (above a message's body) or `BULLET_POINT` (a bullet's icon).
public struct RetentionImageSize: RawStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let fullSize = Self(rawValue: "FULL_SIZE")
    public static let bulletPoint = Self(rawValue: "BULLET_POINT")
    public static let known: Set<Self> = [.fullSize, .bulletPoint]
}

/// Apple's review of an uploaded message or image: `PENDING`, `APPROVED` or `REJECTED`. Only an
/// approved one is shown to customers.
public struct RetentionReviewState: RawStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let pending = Self(rawValue: "PENDING")
    public static let approved = Self(rawValue: "APPROVED")
    public static let rejected = Self(rawValue: "REJECTED")
}

/// Upload Message's body.
public struct UploadRetentionMessage: Codable, Hashable, Sendable {
    public struct Image: Codable, Hashable, Sendable {
        public var imageIdentifier: String
        public var altText: String
        public init(imageIdentifier: String, altText: String) {
            self.imageIdentifier = imageIdentifier
            self.altText = altText
        }
    }

    public struct BulletPoint: Codable, Hashable, Sendable {
        public var text: String
        public var imageIdentifier: String
        public var altText: String
        public init(text: String, imageIdentifier: String, altText: String) {
            self.text = text
            self.imageIdentifier = imageIdentifier
            self.altText = altText
        }
    }

    public var header: String
    public var body: String
    public var image: Image?
    public var headerPosition: RetentionHeaderPosition?
    public var bulletPoints: [BulletPoint]?

    public init(
        header: String, body: String, image: Image? = nil, headerPosition: RetentionHeaderPosition? = nil, bulletPoints: [BulletPoint]? = nil
    ) {
        self.header = header
        self.body = body
        self.image = image
        self.headerPosition = headerPosition
        self.bulletPoints = bulletPoints
    }

    /// What Apple refuses in the message, each naming its field (empty: well formed). Lengths
    /// count characters, as Apple's documentation does.
    public var problems: [String] {
        typealias C = RetentionConfiguration
        var problems: [String] = []
        if header.isEmpty || header.unicodeScalars.count > C.maximumHeaderLength {
            problems.append("header must be 1 to \(C.maximumHeaderLength) characters")
        }
        if body.isEmpty || body.unicodeScalars.count > C.maximumBodyLength { problems.append("body must be 1 to \(C.maximumBodyLength) characters") }
        if let image {
            if !RetentionConfiguration.isUUID(image.imageIdentifier) { problems.append("image.imageIdentifier must be a UUID") }
            if image.altText.unicodeScalars.count > C.maximumAltTextLength {
                problems.append("image.altText must be at most \(C.maximumAltTextLength) characters")
            }
        }
        if let headerPosition {
            if !RetentionHeaderPosition.known.contains(headerPosition) {
                problems.append("headerPosition must be ABOVE_BODY or ABOVE_IMAGE")
            } else if headerPosition == .aboveImage, image == nil {
                problems.append("headerPosition ABOVE_IMAGE needs an image")
            }
        }
        if let bullets = bulletPoints {
            if bullets.count > C.maximumBulletPoints { problems.append("bulletPoints must be at most \(C.maximumBulletPoints)") }
            for (index, bullet) in bullets.enumerated() {
                if bullet.text.isEmpty || bullet.text.unicodeScalars.count > C.maximumBulletPointTextLength {
                    problems.append("bulletPoints[\(index)].text must be 1 to \(C.maximumBulletPointTextLength) characters")
                }
                if !RetentionConfiguration.isUUID(bullet.imageIdentifier) {
                    problems.append("bulletPoints[\(index)].imageIdentifier must be a UUID")
                }
                if bullet.altText.unicodeScalars.count > C.maximumAltTextLength {
                    problems.append("bulletPoints[\(index)].altText must be at most \(C.maximumAltTextLength) characters")
                }
            }
        }
        return problems
    }
}

extension RetentionConfiguration {
    /// Apple's identifiers for messages, images and requests are UUIDs in their canonical text.
    public static func isUUID(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                if byte != UInt8(ascii: "-") { return false }
            } else if !(byte >= 0x30 && byte <= 0x39) && !(byte >= 0x41 && byte <= 0x46) && !(byte >= 0x61 && byte <= 0x66) {
                return false
            }
        }
        return true
    }

    /// A locale as Apple's default-message calls take it: a language, then optional region or
    /// script subtags (`en-US`, `zh-Hant-TW`, `fr_FR`).
    public static func isLocale(_ value: String) -> Bool {
        let parts = value.split(separator: "-", omittingEmptySubsequences: false).flatMap {
            $0.split(separator: "_", omittingEmptySubsequences: false)
        }
        guard let language = parts.first, (2...3).contains(language.utf8.count), language.utf8.allSatisfy(isLetter), parts.count <= 4 else {
            return false
        }
        return parts.dropFirst().allSatisfy { (2...8).contains($0.utf8.count) && $0.utf8.allSatisfy { isLetter($0) || (0x30...0x39).contains($0) } }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
}

/// Get Message List's answer.
public struct RetentionMessageList: Codable, Hashable, Sendable {
    public struct Item: Codable, Hashable, Sendable {
        public var messageIdentifier: String?
        public var messageState: RetentionReviewState?
        public init(messageIdentifier: String?, messageState: RetentionReviewState?) {
            self.messageIdentifier = messageIdentifier
            self.messageState = messageState
        }
    }

    public var messageIdentifiers: [Item]?
    public init(messageIdentifiers: [Item]?) { self.messageIdentifiers = messageIdentifiers }
}

/// Get Image List's answer.
public struct RetentionImageList: Codable, Hashable, Sendable {
    public struct Item: Codable, Hashable, Sendable {
        public var imageIdentifier: String?
        public var imageState: RetentionReviewState?
        public var imageSize: RetentionImageSize?
        public init(imageIdentifier: String?, imageState: RetentionReviewState?, imageSize: RetentionImageSize?) {
            self.imageIdentifier = imageIdentifier
            self.imageState = imageState
            self.imageSize = imageSize
        }
    }

    public var imageIdentifiers: [Item]?
    public init(imageIdentifiers: [Item]?) { self.imageIdentifiers = imageIdentifiers }
}

/// Configure Default Message's body and Get Default Message's answer.
public struct RetentionDefaultMessage: Codable, Hashable, Sendable {
    public var messageIdentifier: String?
    public init(messageIdentifier: String?) { self.messageIdentifier = messageIdentifier }
}

/// Configure Realtime URL's body and Get Realtime URL's answer.
public struct RetentionRealtimeURL: Codable, Hashable, Sendable {
    public var realtimeURL: String?
    public init(realtimeURL: String?) { self.realtimeURL = realtimeURL }
}

/// Initiate Performance Test's body: a sandbox subscription whose requests Apple sends.
public struct RetentionPerformanceTestRequest: Codable, Hashable, Sendable {
    public var originalTransactionId: String
    public init(originalTransactionId: String) { self.originalTransactionId = originalTransactionId }
}

/// How Apple runs the test: concurrency, request count, duration (ms) and what passes (a
/// response-time threshold in ms, a success-rate threshold in percent).
public struct RetentionPerformanceTestConfig: Codable, Hashable, Sendable {
    public var maxConcurrentRequests: Int?
    public var totalRequests: Int?
    public var totalDuration: Int64?
    public var responseTimeThreshold: Int?
    public var successRateThreshold: Int?

    public init(maxConcurrentRequests: Int?, totalRequests: Int?, totalDuration: Int64?, responseTimeThreshold: Int?, successRateThreshold: Int?) {
        self.maxConcurrentRequests = maxConcurrentRequests
        self.totalRequests = totalRequests
        self.totalDuration = totalDuration
        self.responseTimeThreshold = responseTimeThreshold
        self.successRateThreshold = successRateThreshold
    }
}

/// Initiate Performance Test's answer.
public struct RetentionPerformanceTestStarted: Codable, Hashable, Sendable {
    public var config: RetentionPerformanceTestConfig?
    public var requestId: String?
    public init(config: RetentionPerformanceTestConfig?, requestId: String?) {
        self.config = config
        self.requestId = requestId
    }
}

/// `PENDING` while requests are under way, then `PASS` or `FAIL`.
public struct RetentionPerformanceTestStatus: RawStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let pending = Self(rawValue: "PENDING")
    public static let pass = Self(rawValue: "PASS")
    public static let fail = Self(rawValue: "FAIL")
}

/// Get Performance Test Results' answer. Response times in milliseconds; `failures` counts each
/// request that failed by Apple's send-attempt result (`TIMED_OUT`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, …).
public struct RetentionPerformanceTestResult: Codable, Hashable, Sendable {
    public struct ResponseTimes: Codable, Hashable, Sendable {
        public var average: Int?
        public var p50: Int?
        public var p90: Int?
        public var p95: Int?
        public var p99: Int?
        public init(average: Int?, p50: Int?, p90: Int?, p95: Int?, p99: Int?) {
            self.average = average
            self.p50 = p50
            self.p90 = p90
            self.p95 = p95
            self.p99 = p99
        }
    }

    public var config: RetentionPerformanceTestConfig?
    /// The URL the test called.
    public var target: String?
    public var result: RetentionPerformanceTestStatus?
    /// Percent of requests answered well and in time.
    public var successRate: Int?
    public var numPending: Int?
    public var responseTimes: ResponseTimes?
    public var failures: [String: Int]?

    public init(
        config: RetentionPerformanceTestConfig?, target: String?, result: RetentionPerformanceTestStatus?, successRate: Int?, numPending: Int?,
        responseTimes: ResponseTimes?, failures: [String: Int]?
    ) {
        self.config = config
        self.target = target
        self.result = result
        self.successRate = successRate
        self.numPending = numPending
        self.responseTimes = responseTimes
        self.failures = failures
    }
}
