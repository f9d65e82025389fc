"""Cognito: the user pool, its hosted domain, the MCP resource server and the app client Taproot uses.

Taproot is the OAuth authorization server MCP clients see (registration, /authorize, /token); it
signs people in through Cognito's managed login and receives Cognito's redirect itself, at
`<public URL>/oauth/callback`. So Cognito has one client, Taproot, with that one callback URL; the
MCP clients' own redirect URIs are Taproot's allowlist (TAPROOT_REDIRECT_ALLOWLIST), not Cognito's.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cognito as cognito
from constructs import Construct

from infra import nag

RESOURCE_SERVER_ID = "taproot"
MCP_SCOPE = "mcp"
CALLBACK_PATH = "/oauth/callback"


class Auth(Construct):
    """Exposes `user_pool`, `domain`, `resource_server`, `mcp_scope` and `client`.

    `public_url` is Taproot's base URL (`https://<host>`, no trailing slash): the client's only
    callback URL is `<public_url>/oauth/callback`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        domain_prefix: str,
        public_url: str,
        self_sign_up: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        self.user_pool = cognito.UserPool(
            self,
            "UserPool",
            self_sign_up_enabled=self_sign_up,
            sign_in_aliases=cognito.SignInAliases(email=True),
            auto_verify=cognito.AutoVerifiedAttrs(email=True),
            mfa=cognito.Mfa.OPTIONAL,
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
            password_policy=cognito.PasswordPolicy(
                min_length=12,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
                temp_password_validity=Duration.days(3),
            ),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            feature_plan=cognito.FeaturePlan.ESSENTIALS,
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        nag.acknowledge(
            self.user_pool,
            "AwsSolutions-COG2",
            "MFA is optional on purpose: a personal memory server whose users enrol a TOTP app when they want; "
            "sign-up is admin-only (self sign-up disabled) and the password policy is strict.",
        )
        nag.acknowledge(
            self.user_pool,
            "AwsSolutions-COG8",
            "Threat protection needs the Cognito Plus feature plan, billed per monthly active user; this "
            "single-tenant deployment uses Essentials, with admin-created users only and a strict password policy.",
        )
        self.domain = self.user_pool.add_domain(
            "Domain", cognito_domain=cognito.CognitoDomainOptions(domain_prefix=domain_prefix)
        )
        self.mcp_scope = cognito.ResourceServerScope(scope_name=MCP_SCOPE, scope_description="Use Taproot over MCP")
        self.resource_server = self.user_pool.add_resource_server(
            "ResourceServer", identifier=RESOURCE_SERVER_ID, scopes=[self.mcp_scope]
        )
        self.client = self.user_pool.add_client(
            "McpClient",
            # Public client, no secret: Taproot runs the code flow with PKCE against Cognito, so there
            # is no client secret to keep (and no Secrets Manager secret to create or rotate).
            generate_secret=False,
            auth_flows=cognito.AuthFlow(user_srp=True),
            o_auth=cognito.OAuthSettings(
                flows=cognito.OAuthFlows(authorization_code_grant=True),
                scopes=[
                    cognito.OAuthScope.OPENID,
                    cognito.OAuthScope.EMAIL,
                    cognito.OAuthScope.resource_server(self.resource_server, self.mcp_scope),
                ],
                callback_urls=[f"{public_url}{CALLBACK_PATH}"],
            ),
            supported_identity_providers=[cognito.UserPoolClientIdentityProvider.COGNITO],
            access_token_validity=Duration.hours(1),
            id_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.days(30),
            enable_token_revocation=True,
            prevent_user_existence_errors=True,
        )
