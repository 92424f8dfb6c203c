import Foundation
import Hummingbird
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

extension OfferingsController {
    /// Experiments on offerings (docs/EXPERIMENTS.md): listed, created, stopped, shipped. Only
    /// translation: `ManageExperiments` decides.
    func registerExperiments(on admin: RouterGroup<AdminRequestContext>) {
        struct Listing: Encodable { var experiments: [Experiment] }
        admin.get("experiments") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try StorekeeperJSON.response(Listing(experiments: try await context.useCases.experiments.experiments(appId: app.id)))
        }
        admin.put("experiments/:experimentId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let actor = try AdminInput.actor(request, ctx)
            struct Body: Decodable {
                var arms: [Experiment.Arm]
                var startsAt: Date
                var endsAt: Date?
            }
            let data = try await context.body(request)
            // The path names the experiment, and a stop is a route of its own.
            try AdminInput.refuseFields(
                data, except: ["arms", "startsAt", "endsAt"], nested: ["arms": ["offering", "weight"]], note: "the path names the experiment")
            let body = try StorekeeperJSON.decode(Body.self, from: data)
            let id = try ctx.parameters.decoded("experimentId")
            let experiment = Experiment(id: id, arms: body.arms, startsAt: body.startsAt, endsAt: body.endsAt)
            switch try await context.useCases.experiments.create(appId: app.id, experiment: experiment, actor: actor, now: context.now()) {
            case .created: return try StorekeeperJSON.response(experiment, status: .created)
            case .invalid(let problems): throw StorekeeperError(.invalidRequest, problems.joined(separator: "; "))
            case .unknownOfferings(let ids):
                throw StorekeeperError(.notFound, "no offering " + ids.map { "'\($0)'" }.joined(separator: ", ") + " in app '\(app.id)'")
            case .exists: throw StorekeeperError(.conflict, "experiment '\(id)' exists: an experiment's arms are fixed, a new split is a new id")
            case .another(let open): throw StorekeeperError(.conflict, "experiment '\(open)' is not stopped: one experiment at a time")
            }
        }
        admin.get("experiments/:experimentId/results") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let id = try ctx.parameters.decoded("experimentId")
            let environment = QueryInput(request).string("environment")
            if let environment, environment.isEmpty || environment.utf8.count > 64 {
                throw StorekeeperError(.invalidRequest, "environment: 1-64 characters (Production, Sandbox)")
            }
            guard
                let results = try await context.useCases.experiments.results(
                    appId: app.id, experimentId: id, environment: environment, now: context.now(), reporting: app.reporting)
            else { throw StorekeeperError(.notFound, "no experiment '\(id)'") }
            return try StorekeeperJSON.response(results)
        }
        admin.post("experiments/:experimentId/stop") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let id = try ctx.parameters.decoded("experimentId")
            switch try await context.useCases.experiments.stop(
                appId: app.id, experimentId: id, actor: try AdminInput.actor(request, ctx), now: context.now())
            {
            case .stopped: return Response(status: .noContent)
            case .notFound: throw StorekeeperError(.notFound, "no experiment '\(id)'")
            case .stoppedAlready: throw StorekeeperError(.conflict, "experiment '\(id)' is stopped already")
            }
        }
        admin.post("experiments/:experimentId/ship") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let id = try ctx.parameters.decoded("experimentId")
            let actor = try AdminInput.actor(request, ctx)
            struct Body: Decodable { var arm: Int }
            let data = try await context.body(request)
            try AdminInput.refuseFields(data, except: ["arm"], note: "the arm's offering is the experiment's")
            let body = try StorekeeperJSON.decode(Body.self, from: data)
            switch try await context.useCases.experiments.ship(appId: app.id, experimentId: id, arm: body.arm, actor: actor, now: context.now()) {
            case .shipped: return Response(status: .noContent)
            case .notFound: throw StorekeeperError(.notFound, "no experiment '\(id)'")
            case .unknownArm: throw StorekeeperError(.invalidRequest, "arm: experiment '\(id)' has no arm \(body.arm)")
            case .unknownOffering(let offering): throw StorekeeperError(.notFound, "no offering '\(offering)' in app '\(app.id)' (deleted since)")
            case .shippedAlready(let arm): throw StorekeeperError(.conflict, "experiment '\(id)' shipped arm \(arm) already")
            }
        }
    }
}
