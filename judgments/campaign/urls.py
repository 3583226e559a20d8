"""Campaign URLs (admins): pools, their people and teams; and the set-password page a new rater's link opens."""

from django.urls import path

from . import people, queries, views

app_name = "campaign"

urlpatterns = [
    path("campaign/", views.index, name="index"),
    path("campaign/pools/new/", views.pool_new, name="pool-new"),
    path("campaign/guidelines-preview/", views.guidelines_preview, name="guidelines-preview"),
    path("campaign/pools/<str:pool_name>/", views.pool_edit, name="pool-edit"),
    path("campaign/pools/<str:pool_name>/people/", people.people, name="people"),
    path("campaign/pools/<str:pool_name>/queries/", queries.queries_page, name="queries"),
    path("campaign/pools/<str:pool_name>/people/add/", people.member_add, name="member-add"),
    path("campaign/pools/<str:pool_name>/people/new/", people.rater_new, name="rater-new"),
    path("campaign/pools/<str:pool_name>/people/<int:user_id>/link/", people.member_link, name="member-link"),
    path(
        "campaign/pools/<str:pool_name>/people/<int:user_id>/remove/",
        people.member_remove,
        name="member-remove",
    ),
    path(
        "campaign/pools/<str:pool_name>/people/<int:user_id>/active/",
        people.member_active,
        name="member-active",
    ),
    path(
        "campaign/pools/<str:pool_name>/people/<int:user_id>/standing/",
        people.member_standing,
        name="member-standing",
    ),
    path("campaign/teams/", views.teams, name="teams"),
    path("campaign/teams/<int:team_id>/", views.team_detail, name="team"),
    path("campaign/teams/<int:team_id>/members/", views.team_member_add, name="team-member-add"),
    path(
        "campaign/teams/<int:team_id>/members/<int:user_id>/remove/",
        views.team_member_remove,
        name="team-member-remove",
    ),
    path(
        "campaign/configurations/<int:configuration_id>/move/",
        views.configuration_move,
        name="configuration-move",
    ),
    path("accounts/set-password/<str:uidb64>/<str:token>/", people.set_password, name="set-password"),
]
