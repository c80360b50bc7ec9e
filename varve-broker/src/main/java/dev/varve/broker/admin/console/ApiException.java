package dev.varve.broker.admin.console;

/** An answer other than 200 from the console's API: the HTTP status and a message for the person at the page. */
final class ApiException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int status;

    ApiException(int status, String message) {
        super(message, null, false, false);
        this.status = status;
    }

    static ApiException badRequest(String message) {
        return new ApiException(400, message);
    }

    static ApiException notFound(String message) {
        return new ApiException(404, message);
    }
}
