"""Configuration of the cloud deployment, from the Lambda environment: the API's claim names and
write role beside what the services are built from (:class:`citewell.deployments.AwsDeployment`),
and the services built once per container (:func:`citewell.deployments.open_aws`)."""

from __future__ import annotations

from functools import lru_cache

from citewell.api.settings import ApiSettings
from citewell.deployments import AwsDeployment, open_aws
from citewell.services import Services


class AwsSettings(ApiSettings, AwsDeployment):
    """The function's settings: the API's claim names and write role, and what its services are built from."""

    @classmethod
    def from_env(cls) -> AwsSettings:
        return cls(**cls.env_fields(), **cls.deployment_fields())


@lru_cache(maxsize=1)
def services_from_env() -> tuple[AwsSettings, Services]:
    """Built once per Lambda container, on first use."""
    settings = AwsSettings.from_env()
    return settings, open_aws(settings)
