import AppStoreClient
import AppStoreModels
import Foundation
import StorekeeperCore
import StorekeeperDomain

/// `AnswerRefundRequests`' port to Apple over the app's `AppStoreServerAPIClient`: v2, and where
/// the environment has no v2 endpoint (a 404 that is not one of Apple's errors) the same answer
/// in v1's terms.
struct ConsumptionSender: AppleConsumptionAPI {
    let client: AppStoreServerAPIClient

    func send(_ answer: ConsumptionAnswer, transactionId: String, environment: AppStoreEnvironment) async -> ConsumptionDelivery {
        let body = ConsumptionRequestV2(
            customerConsented: answer.customerConsented, sampleContentProvided: answer.sampleContentProvided,
            deliveryStatus: answer.deliveryStatus, consumptionPercentage: answer.consumptionPercentage,
            refundPreference: answer.refundPreference)
        do {
            do {
                try await client.sendConsumptionInformation(transactionId, body, in: .only(environment))
                return .taken(note: "")
            } catch let error as ServerAPIError where error.code == .apiError && error.httpStatus == 404 && error.apiErrorCode == nil {
                try await client.sendConsumptionInformation(transactionId, Self.v1(answer), environment: environment)
                return .taken(note: " (v1)")
            }
        } catch let error as ServerAPIError where error.isTransient {
            return .unavailable(reason: error.code.rawValue, retryAfter: error.retryAfter)
        } catch {
            return .refused("\(error)")
        }
    }

    /// The answer in Send Consumption Information v1's terms: what v2 says, and "undeclared" (0)
    /// for what v1 asks beyond it (tenure, play time, lifetime spend, account status).
    static func v1(_ answer: ConsumptionAnswer) -> ConsumptionRequest {
        let consumption: Int
        switch answer.consumptionPercentage {
        case nil: consumption = 0
        case 0?: consumption = 1
        case 100_000?: consumption = 3
        default: consumption = 2
        }
        let delivery =
            ["DELIVERED": 0, "UNDELIVERED_QUALITY_ISSUE": 1, "UNDELIVERED_WRONG_ITEM": 2, "UNDELIVERED_SERVER_OUTAGE": 3][answer.deliveryStatus] ?? 5
        let preference: Int =
            switch answer.refundPreference {
            case "GRANT_FULL", "GRANT_PRORATED": 1
            case "DECLINE": 2
            case nil: 0
            default: 3
            }
        return ConsumptionRequest(
            customerConsented: answer.customerConsented, consumptionStatus: consumption, platform: 1,
            sampleContentProvided: answer.sampleContentProvided, deliveryStatus: delivery, refundPreference: preference)
    }

}
