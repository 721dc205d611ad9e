from django.contrib.auth import views as auth_views
from django.urls import path

from leaderboard.accounts import views
from leaderboard.accounts.forms import ThrottledAuthenticationForm, VerifiedPasswordResetForm

urlpatterns = [
    path("accounts/signup/", views.signup, name="signup"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(
            template_name="accounts/login.html",
            redirect_authenticated_user=True,
            authentication_form=ThrottledAuthenticationForm,
        ),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "accounts/password/reset/",
        views.PasswordResetView.as_view(
            template_name="accounts/password_reset.html",
            email_template_name="accounts/password_reset_email.txt",
            subject_template_name="accounts/password_reset_subject.txt",
            form_class=VerifiedPasswordResetForm,
        ),
        name="password_reset",
    ),
    path(
        "accounts/password/reset/sent/",
        auth_views.PasswordResetDoneView.as_view(template_name="accounts/password_reset_sent.html"),
        name="password_reset_done",
    ),
    path(
        "accounts/password/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            template_name="accounts/password_reset_confirm.html"
        ),
        name="password_reset_confirm",
    ),
    path(
        "accounts/password/reset/done/",
        auth_views.PasswordResetCompleteView.as_view(
            template_name="accounts/password_reset_complete.html"
        ),
        name="password_reset_complete",
    ),
    path("accounts/email/verify/<str:token>/", views.email_verify, name="email-verify"),
    path("accounts/profile/", views.profile, name="profile"),
    path("accounts/tokens/", views.token_list, name="token-list"),
    path("accounts/tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
    path("teams/", views.team_list, name="team-list"),
    path("teams/<slug:slug>/", views.team_detail, name="team-detail"),
    path("teams/<slug:slug>/members/", views.team_member_add, name="team-member-add"),
    path(
        "teams/<slug:slug>/members/<int:membership_id>/remove/",
        views.team_member_remove,
        name="team-member-remove",
    ),
]
