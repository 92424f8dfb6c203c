import AppStoreModels
import StorekeeperDomain
import StorekeeperWire

extension CatalogProduct {
    /// A catalog entry as the API answers it.
    init(_ product: Product) {
        self.init(
            productId: product.productId, type: product.type.rawValue, status: product.status.rawValue, duration: product.duration,
            creditAmount: product.creditAmount, priceMicros: product.priceMicros, currency: product.currency, displayName: product.displayName)
    }
}

extension OfferingsAnswer {
    /// The offerings chosen for the app's user, as `GET /v1/offerings` answers them.
    init(_ selection: OfferingSelection) {
        self.init(
            currentOfferingId: selection.currentOfferingId, selectedBy: selection.selectedBy.rawValue, ruleId: selection.ruleId,
            experiment: selection.experiment.map {
                ExperimentArm(experimentId: $0.experimentId, arm: $0.arm, offeringId: $0.offering, enrolledAt: $0.enrolledAt)
            },
            offerings: selection.offerings.map { offering in
                Offering(
                    id: offering.id, description: offering.description,
                    packages: offering.packages.map { Offering.Package(id: $0.id, productId: $0.productId, product: CatalogProduct($0.product)) },
                    metadata: offering.metadata.flatMap { metadata in
                        guard case .object(let fields) = metadata else { return nil }
                        return fields
                    })
            })
    }
}
