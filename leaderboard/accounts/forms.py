from django import forms
from django.contrib.auth.forms import UserCreationForm

from evaluation.models import Membership


class SignUpForm(UserCreationForm):
    email = forms.EmailField(required=False, help_text="Optional; never shown publicly.")

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class TeamForm(forms.Form):
    name = forms.CharField(max_length=200)


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. 'CI uploads'.")
