import BadgeWorker
import Testing

@Suite("Broker versions")
struct BrokerVersionTests {
    @Test func readsTheVersionsRabbitMQReports() {
        #expect(BrokerVersion("3.10.8") == BrokerVersion(3, 10, 8))
        #expect(BrokerVersion("4.1.0-rc.1") == BrokerVersion(4, 1, 0))
        #expect(BrokerVersion("3.13.7+12.g1234") == BrokerVersion(3, 13, 7))
        #expect(BrokerVersion("4.3") == BrokerVersion(4, 3, 0))
        #expect(BrokerVersion("x.y") == nil)
        #expect(BrokerVersion("") == nil)
    }

    @Test func saysWhatEachVersionCanCarry() {
        #expect(BrokerVersion(3, 10, 8).support == .supported)
        #expect(BrokerVersion(3, 13, 7).support == .supported)
        #expect(BrokerVersion(4, 3, 0).support == .supported)
        #expect(BrokerVersion(5, 0, 0).support == .supported)
        guard case .untested = BrokerVersion(3, 9, 29).support else { Issue.record("3.9 is untested"); return }
        guard case .unsupported = BrokerVersion(3, 7, 28).support else { Issue.record("3.7 is refused"); return }
        for version in [BrokerVersion(4, 0, 0), BrokerVersion(4, 1, 4), BrokerVersion(4, 2, 9)] {
            guard case .unstableRouting(let why) = version.support else {
                Issue.record("\(version) must be refused")
                continue
            }
            #expect(why.contains("Khepri"))
            #expect(why.contains("--allow-unstable-routing"))
        }
    }

    @Test func theDeadQueueNeedsAnExplicitLimitFromFour() {
        #expect(!BrokerVersion(3, 13, 7).defaultsDeliveryLimit)
        #expect(BrokerVersion(4, 0, 0).defaultsDeliveryLimit)
        #expect(!BrokerVersion(4, 2, 0).hasBuiltInModulusHash)
        #expect(BrokerVersion(4, 3, 0).hasBuiltInModulusHash)
    }
}

@Suite("Queue replication on a cluster")
struct QueueReplicationTests {
    @Test func aQuorumQueueOnThreeNodesSurvivesOneNodesLoss() {
        let queue = QueueReplication(queue: "q", type: "quorum", members: ["a", "b", "c"], leader: "a")
        #expect(queue.warning(clusterSize: 3) == nil)
        #expect(queue.warning(clusterSize: 5) == nil)
        #expect(queue.summary == "q: quorum, 3 members (a, b, c), leader a")
    }

    @Test func fewerMembersThanWantedOrAClassicQueueIsWarnedAbout() throws {
        let lonely = QueueReplication(queue: "q", type: "quorum", members: ["a"])
        let warning = try #require(lonely.warning(clusterSize: 3))
        #expect(warning.hasPrefix("q: 1 of 3 members (a)"))
        #expect(QueueReplication(queue: "q", type: "quorum", members: ["a", "b"]).warning(clusterSize: 3) != nil)
        #expect(QueueReplication(queue: "q", type: "quorum", members: ["a", "b"]).warning(clusterSize: 2) == nil)
        #expect(QueueReplication(queue: "q", type: "classic", members: ["a"]).warning(clusterSize: 3) != nil)
    }

    @Test func aSingleNodeIsNeverWarnedAbout() {
        #expect(QueueReplication(queue: "q", type: "classic", members: ["a"]).warning(clusterSize: 1) == nil)
        #expect(QueueReplication.membersWanted(clusterSize: 1) == 1)
        #expect(QueueReplication.membersWanted(clusterSize: 7) == 3)
    }
}
