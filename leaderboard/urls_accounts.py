from django.contrib.auth import views as auth_views
from django.urls import path

from leaderboard.accounts import views
from leaderboard.accounts.forms import ThrottledAuthenticationForm

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
