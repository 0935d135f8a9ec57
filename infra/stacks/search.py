"""The search engine: an OpenSearch domain with fine-grained access control, or an
OpenSearch Serverless vector collection (context ``search=serverless``)."""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_opensearchserverless as aoss
from aws_cdk import aws_opensearchservice as opensearch
from constructs import Construct

COLLECTION = "citewell-chunks"


class Search(Construct):
    def __init__(self, scope: Construct, construct_id: str, serverless: bool) -> None:
        super().__init__(scope, construct_id)
        self.serverless = serverless
        self._principals: list[str] = []
        if serverless:
            encryption = aoss.CfnSecurityPolicy(
                self, "Encryption", name=f"{COLLECTION}-enc", type="encryption",
                policy=json.dumps({"Rules": [{"ResourceType": "collection", "Resource": [f"collection/{COLLECTION}"]}],
                                   "AWSOwnedKey": True}),
            )
            network = aoss.CfnSecurityPolicy(
                self, "Network", name=f"{COLLECTION}-net", type="network",
                policy=json.dumps([{"Rules": [{"ResourceType": "collection", "Resource": [f"collection/{COLLECTION}"]}],
                                    "AllowFromPublic": True}]),
            )
            self.collection = aoss.CfnCollection(self, "Collection", name=COLLECTION, type="VECTORSEARCH")
            self.collection.add_dependency(encryption)
            self.collection.add_dependency(network)
            self.endpoint = cdk.Fn.select(1, cdk.Fn.split("https://", self.collection.attr_collection_endpoint))
        else:
            admin = iam.Role(self, "SearchAdmin", assumed_by=iam.AccountRootPrincipal(),
                             description="master user of the domain's fine-grained access control")
            self.domain = opensearch.Domain(
                self, "Domain",
                version=opensearch.EngineVersion.OPENSEARCH_2_19,
                capacity=opensearch.CapacityConfig(data_nodes=2, data_node_instance_type="r6g.large.search",
                                                   multi_az_with_standby_enabled=False),
                ebs=opensearch.EbsOptions(volume_size=50, volume_type=ec2.EbsDeviceVolumeType.GP3),
                zone_awareness=opensearch.ZoneAwarenessConfig(enabled=True, availability_zone_count=2),
                node_to_node_encryption=True,
                encryption_at_rest=opensearch.EncryptionAtRestOptions(enabled=True),
                enforce_https=True,
                fine_grained_access_control=opensearch.AdvancedSecurityOptions(master_user_arn=admin.role_arn),
                removal_policy=cdk.RemovalPolicy.RETAIN,
            )
            self.endpoint = self.domain.domain_endpoint

    def seal(self) -> None:
        """Serverless only: the data access policy names every role granted so far."""
        if not self.serverless:
            return
        aoss.CfnAccessPolicy(
            self, "DataAccess", name=f"{COLLECTION}-data", type="data",
            policy=cdk.Fn.to_json_string([{
                "Rules": [
                    {"ResourceType": "index", "Resource": [f"index/{COLLECTION}/*"],
                     "Permission": ["aoss:CreateIndex", "aoss:DescribeIndex", "aoss:ReadDocument",
                                    "aoss:WriteDocument", "aoss:UpdateIndex", "aoss:DeleteIndex"]},
                    {"ResourceType": "collection", "Resource": [f"collection/{COLLECTION}"],
                     "Permission": ["aoss:DescribeCollectionItems"]},
                ],
                "Principal": self._principals,
            }]),
        )

    def grant(self, role: iam.IRole) -> None:
        """Read and write the chunk indexes: HTTP verbs on the domain, or the collection's data API."""
        if self.serverless:
            self._principals.append(role.role_arn)
            role.add_to_principal_policy(iam.PolicyStatement(
                actions=["aoss:APIAccessAll"], resources=[self.collection.attr_arn]))
        else:
            self.domain.grant_read_write(role)
            role.add_to_principal_policy(iam.PolicyStatement(
                actions=["es:ESHttpDelete", "es:ESHttpHead"], resources=[self.domain.domain_arn, f"{self.domain.domain_arn}/*"]))
