"""The search engine: an OpenSearch Service domain whose access is IAM only.

Fine-grained access control is off, so no OpenSearch role has to be mapped by hand after a
deploy: the domain's resource policy delegates to IAM (the account's principals), and each
function role's identity policy names the HTTP verbs and index paths it uses. Those paths hold
because the domain refuses an index named in a request body
(``rest.action.multi.allow_explicit_index: false``): a ``_bulk`` or ``_msearch`` reaches only
the index in its path, so every one is sent to the alias's (or a migration's index's). OpenSearch
Serverless is not offered: its vector collections take no custom document ids, no
``refresh``, no ``_delete_by_query`` and no force merge, which the deletion guarantee rests on.

The domain publishes its search and indexing slow logs and its application (error) logs to
CloudWatch Logs. OpenSearch Service writes them as ``es.amazonaws.com``, which the log groups'
resource policy must allow before the domain is created or updated (it refuses a group it cannot
write to): the stack writes that policy itself, as an ``AWS::Logs::ResourcePolicy``, rather than
through the CDK's custom resource (a Lambda function and its role, for one API call).
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_opensearchservice as opensearch
from constructs import Construct

ALIAS = "citewell-chunks"  # the alias and the prefix of every index behind it (CITEWELL_INDEX_ALIAS)
LOOKUP = ("es:ESHttpHead", "es:ESHttpGet")  # alias and index lookups, mappings, GET searches
QUERY_POSTS = ("_search", "_msearch", "_count", "_delete_by_query")  # the POSTs a query role makes, on the alias's path
WRITE = ("es:ESHttpPut",)  # create an index and its alias


@dataclass(frozen=True)
class Capacity:
    """The domain's nodes: data nodes spread over ``zones`` Availability Zones, and ``masters``
    dedicated master nodes (none: the data nodes elect a master among themselves)."""

    data_nodes: int
    zones: int
    masters: int
    data_node_type: str = "r6g.large.search"
    master_node_type: str = "m6g.large.search"
    volume_gib: int = 50  # gp3, per data node


# Context ``profile``. The default keeps each shard's replica in the other zone, but its two data
# nodes are also its only master-eligible nodes: losing one can leave the cluster without a
# master, and cluster management competes with search. Production spreads three data nodes over
# three zones, and three dedicated masters keep a quorum when a zone goes.
PROFILES = {
    "default": Capacity(data_nodes=2, zones=2, masters=0),
    "production": Capacity(data_nodes=3, zones=3, masters=3),
}


class Search(Construct):
    def __init__(self, scope: Construct, construct_id: str, profile: str = "default") -> None:
        super().__init__(scope, construct_id)
        capacity = PROFILES[profile]
        self.capacity = capacity
        self.volume_gib = capacity.volume_gib
        stack = cdk.Stack.of(self)
        # Retention: the stack's log_retention_days, set on every log group (stacks.logs.keep_logs).
        self.log_groups = {name: logs.LogGroup(self, f"{name}Logs", removal_policy=cdk.RemovalPolicy.DESTROY)
                           for name in ("SearchSlow", "IndexSlow", "Application")}
        writes = logs.ResourcePolicy(self, "LogDelivery", policy_statements=[iam.PolicyStatement(
            principals=[iam.ServicePrincipal("es.amazonaws.com")],
            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
            resources=[group.log_group_arn for group in self.log_groups.values()],
            # Only this account's domains (the confused-deputy guard AWS recommends; the domain's own
            # ARN would make the domain and the policy it waits for depend on each other).
            conditions={"StringEquals": {"aws:SourceAccount": stack.account},
                        "ArnLike": {"aws:SourceArn": f"arn:{stack.partition}:es:{stack.region}:{stack.account}:domain/*"}},
        )])
        masters = ({"master_nodes": capacity.masters, "master_node_instance_type": capacity.master_node_type}
                   if capacity.masters else {})
        self.domain = opensearch.Domain(
            self, "Domain",
            version=opensearch.EngineVersion.OPENSEARCH_2_19,
            capacity=opensearch.CapacityConfig(data_nodes=capacity.data_nodes, data_node_instance_type=capacity.data_node_type,
                                               multi_az_with_standby_enabled=False, **masters),  # type: ignore[arg-type]
            ebs=opensearch.EbsOptions(volume_size=self.volume_gib, volume_type=ec2.EbsDeviceVolumeType.GP3),
            zone_awareness=opensearch.ZoneAwarenessConfig(enabled=True, availability_zone_count=capacity.zones),
            node_to_node_encryption=True,
            encryption_at_rest=opensearch.EncryptionAtRestOptions(enabled=True),
            enforce_https=True,
            tls_security_policy=opensearch.TLSSecurityPolicy.TLS_1_2_PFS,  # TLS 1.2 and 1.3, forward-secret ciphers only
            advanced_options={"rest.action.multi.allow_explicit_index": "false"},
            logging=opensearch.LoggingOptions(
                slow_search_log_enabled=True, slow_search_log_group=self.log_groups["SearchSlow"],
                slow_index_log_enabled=True, slow_index_log_group=self.log_groups["IndexSlow"],
                app_log_enabled=True, app_log_group=self.log_groups["Application"]),
            suppress_logs_resource_policy=True,  # written above, without a custom resource
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        self.domain.node.add_dependency(writes)
        account = cdk.Stack.of(self).account
        # Delegate to IAM: a request is allowed when the caller's identity policy allows it.
        self.domain.add_access_policies(iam.PolicyStatement(
            principals=[iam.AccountPrincipal(account)], actions=["es:ESHttp*"], resources=[f"{self.domain.domain_arn}/*"]))
        self.endpoint = self.domain.domain_endpoint

    def _paths(self) -> list[str]:
        arn = self.domain.domain_arn
        return [f"{arn}/{ALIAS}", f"{arn}/{ALIAS}-*", f"{arn}/{ALIAS}/*", f"{arn}/_alias/{ALIAS}"]

    def grant_purge(self, role: iam.IRole) -> None:
        """Remove one revision's rows and nothing else: look the alias up (HEAD), read its mapping
        (GET), POST ``_delete_by_query``. A stage whose upload was superseded purges what it indexed."""
        arn = self.domain.domain_arn
        for action, path in (("es:ESHttpHead", f"_alias/{ALIAS}"), ("es:ESHttpGet", f"{ALIAS}/_mapping"),
                             ("es:ESHttpPost", f"{ALIAS}/_delete_by_query")):
            role.add_to_principal_policy(iam.PolicyStatement(actions=[action], resources=[f"{arn}/{path}"]))

    def grant_query(self, role: iam.IRole) -> None:
        """Look up, search, count and delete rows of the chunk indexes, and POST nothing else: a
        ``_bulk`` (which writes) is the indexers' alone (:meth:`grant_index`)."""
        arn = self.domain.domain_arn
        role.add_to_principal_policy(iam.PolicyStatement(actions=list(LOOKUP), resources=self._paths()))
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["es:ESHttpPost"], resources=[f"{arn}/{ALIAS}/{operation}" for operation in QUERY_POSTS]))

    def grant_index(self, role: iam.IRole) -> None:
        """Also create the index for an embedder identity and its alias; rows are bulk-written
        on the alias's path (``POST citewell-chunks/_bulk``), never the domain's root."""
        self.grant_query(role)
        role.add_to_principal_policy(iam.PolicyStatement(actions=list(WRITE), resources=self._paths()))
        role.add_to_principal_policy(iam.PolicyStatement(actions=["es:ESHttpPost"], resources=self._paths()))  # _bulk
