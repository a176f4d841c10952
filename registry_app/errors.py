from console.errors import ApiError


class InvalidRegistryDocument(ApiError):
    status, code, message = 400, "invalid_registry", "The registry document is not valid; nothing was changed."

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__(details={"problems": [str(problem) for problem in self.problems]})


class RegistryNotLoaded(ApiError):
    status, code, message = 404, "registry_not_loaded", "No registry has been loaded yet (manage.py load_registry <file>)."


class UnknownLane(ApiError):
    status, code, message = 404, "not_found", "No lane with this id in the current registry."


class UnknownVersion(ApiError):
    status, code, message = 404, "not_found", "No registry version with this number."
