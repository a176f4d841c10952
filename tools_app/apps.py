from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ToolsAppConfig(AppConfig):
    name = "tools_app"
    verbose_name = _("Assistants' tools")

    def ready(self):
        # What an assistant names that the core cannot check itself
        # (console.assistants.references): the touchpoint it opens with, the lane it
        # thinks on, the lane its voice is of, the tenant's HTTP tools it may call.
        from console.assistants import references
        from tools_app import checks, connection, definitions

        references.register_reference(references.OPENING_TOUCHPOINT, check=checks.opening_touchpoint_problems,
                                      choices=checks.opening_touchpoint_choices)
        references.register_reference(references.GREETING, check=checks.greeting_problems)
        references.register_reference(references.MODEL_LANE, check=checks.chat_lane_problems,
                                      choices=checks.chat_lane_choices)
        references.register_offline_check(checks.assistant_thinks_offline, connection=checks.assistant_connection)
        references.register_connection_test(connection.assistant_connection_test)
        references.register_reference(references.VOICE_LANE, check=checks.voice_lane_problems,
                                      choices=checks.voice_choices)
        references.register_reference(references.TRANSCRIBER_LANE, check=checks.transcriber_lane_problems,
                                      choices=checks.transcriber_lane_choices)
        references.register_reference(references.REALTIME_LANE, check=checks.realtime_lane_problems)
        references.register_reference(references.HTTP_TOOLS, check=checks.http_tool_problems,
                                      choices=checks.http_tool_choices)
        # A published version keeps its HTTP tools' definitions as they were.
        references.register_snapshot_part(definitions.SNAPSHOT_PART, take=definitions.http_tools_recorded)
